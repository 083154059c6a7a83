package steps

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// SupervisorVerdicts are an upgrade's compatibility results per
// Supervisor; Failed holds, per Supervisor, why the evaluation could not
// run for it.
type SupervisorVerdicts struct {
	Results map[string][]lifecycle.CheckResult
	Failed  map[string]error
}

// CompatibilityBySupervisor evaluates an upgrade (installed → target) once
// per distinct environment (Supervisor and Kubernetes version) among the
// Supervisors scoped renders to, and hands each result to every Supervisor
// of that environment: a fleet of 1,000 Supervisors on three versions costs
// three evaluations. The rollout's wave gates and the fleet plan both use
// it. An error is returned only when the environments cannot be read.
func CompatibilityBySupervisor(ctx context.Context, inventory InventoryReader, compat lifecycle.Compatibility, installed, target lifecycle.PackageVersion, scoped *Rendered) (*SupervisorVerdicts, error) {
	envs, err := Environments(ctx, inventory, scoped)
	if err != nil {
		return nil, err
	}
	type class struct{ sup, k8s string }
	groups := map[class][]string{}
	var order []class
	for _, e := range envs {
		c := class{e.SupervisorVersion, e.KubernetesVersion}
		if _, ok := groups[c]; !ok {
			order = append(order, c)
		}
		groups[c] = append(groups[c], e.Supervisor)
	}
	out := &SupervisorVerdicts{Results: map[string][]lifecycle.CheckResult{}, Failed: map[string]error{}}
	for _, c := range order {
		members := groups[c]
		verdict, err := compat.EvaluateUpgrade(ctx, installed, target,
			[]lifecycle.Environment{{Supervisor: members[0], SupervisorVersion: c.sup, KubernetesVersion: c.k8s}})
		for _, s := range members {
			if err != nil {
				out.Failed[s] = err
				continue
			}
			out.Results[s] = verdict.Results
		}
	}
	return out, nil
}
