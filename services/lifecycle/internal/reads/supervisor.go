package reads

import (
	"context"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// CheckSupervisorUpgrade evaluates every service installed on a Supervisor
// against a target version without changing anything.
func (p *Previews) CheckSupervisorUpgrade(ctx context.Context, supervisor, targetVersion, targetK8s string) (*steps.SupervisorVerdict, error) {
	if strings.TrimSpace(targetVersion) == "" {
		return nil, fmt.Errorf("targetVersion is required (e.g. 9.1.0.0): %w", lifecycle.ErrInvalidArgument)
	}
	inv, err := p.ports.Repo.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	sup, ok := steps.SupervisorsByName(inv)[supervisor]
	if !ok {
		return nil, fmt.Errorf("supervisor %q is not in the platform inventory: %w", supervisor, lifecycle.ErrNotFound)
	}
	if targetK8s == "" {
		targetK8s = sup.KubernetesVersion
	}
	return steps.EvaluateSupervisor(ctx, p.ports.Repo, p.bundles, p.ports.Peers.Compatibility, sup.Name, targetVersion, targetK8s)
}
