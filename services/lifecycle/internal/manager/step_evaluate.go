package manager

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// environments are the Supervisors the service runs on (serviceSupervisors),
// with their versions from the inventory the render used.
func (m *core) environments(ctx context.Context, rend *rendered) ([]lifecycle.Environment, error) {
	inv := rend.Inventory
	if inv == nil {
		var err error
		if inv, err = m.repo.Inventory(ctx); err != nil {
			return nil, err
		}
	}
	byName := supervisorsByName(inv)
	var envs []lifecycle.Environment
	for _, name := range serviceSupervisors(rend.Resources, inv) {
		sup, ok := byName[name]
		if !ok {
			return nil, lifecycle.Blocked(lifecycle.ErrTypeInstall, fmt.Errorf("rendered resources target Supervisor %q, which is not in the platform inventory (GET /v2/inventory)", name))
		}
		envs = append(envs, lifecycle.Environment{Supervisor: name, SupervisorVersion: sup.Version, KubernetesVersion: sup.KubernetesVersion})
	}
	return envs, nil
}

func supervisorsByName(inv *lifecycle.Inventory) map[string]lifecycle.Supervisor {
	out := map[string]lifecycle.Supervisor{}
	for _, r := range inv.RegionList() {
		for _, s := range r.Supervisors {
			out[s.Name] = s
			if s.ID != "" {
				out[s.ID] = s
			}
		}
	}
	return out
}

// resultDetails turns compatibility results into error details; ERRORs
// block.
func resultDetails(results []lifecycle.CheckResult) (details []lifecycle.ErrorDetail, blockers []string) {
	for _, res := range results {
		sev := lifecycle.SeverityInfo
		switch strings.ToUpper(res.Severity) {
		case "ERROR":
			sev = lifecycle.SeverityError
			blockers = append(blockers, res.Message)
		case "WARNING":
			sev = lifecycle.SeverityWarn
		}
		details = append(details, lifecycle.ErrorDetail{Type: lifecycle.ErrTypeInstall, Severity: sev, Message: res.Message})
	}
	return details, blockers
}

func (m *core) checkInstall(ctx context.Context, svc *lifecycle.Service, b *bundle.Bundle, rend *rendered) error {
	envs, err := m.environments(ctx, rend)
	if err != nil {
		return err
	}
	verdict, err := m.peers.Compatibility.EvaluateInstall(ctx, packageVersion(b, svc.Version, svc.BuiltIn), envs)
	if err != nil {
		return err
	}
	details, blockers := resultDetails(verdict.Results)
	if _, err := m.Mutate(ctx, svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.ErrorDetails = append(withoutType(s.ErrorDetails, lifecycle.ErrTypeInstall), nonErrors(details)...)
		return nil
	}); err != nil {
		return err
	}
	if verdict.Blocked || len(blockers) > 0 {
		return lifecycle.BlockedWith(lifecycle.ErrTypeInstall, fmt.Errorf("compatibility check failed: %s", strings.Join(blockers, "; ")), details)
	}
	return nil
}

func nonErrors(ds []lifecycle.ErrorDetail) []lifecycle.ErrorDetail {
	var out []lifecycle.ErrorDetail
	for _, d := range ds {
		if d.Severity != lifecycle.SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// noteResults keeps WARNING/INFO results visible and blocks on ERRORs.
// A blocked operation shows every result (docs/decisions.md, "A blocked
// upgrade shows everything"): the failure's message lists them all, and
// each is its own errorDetail, so an administrator sees the warnings too.
func (m *core) noteResults(ctx context.Context, id string, results []lifecycle.CheckResult, what string) error {
	details, blockers := resultDetails(results)
	if _, err := m.Mutate(ctx, id, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.ErrorDetails = append(s.ErrorDetails, nonErrors(details)...)
		return nil
	}); err != nil {
		return err
	}
	if len(blockers) > 0 {
		all := make([]string, len(details))
		for i, d := range details {
			all[i] = d.Severity + " " + d.Message
		}
		return lifecycle.BlockedWith(lifecycle.ErrTypeInstall, fmt.Errorf("%s: %s", what, strings.Join(all, "; ")), details)
	}
	return nil
}

func (m *core) upgradeCompatibility(ctx context.Context, svc *lifecycle.Service, ob, nb *bundle.Bundle, toVersion string, rend *rendered) ([]lifecycle.CheckResult, error) {
	envs, err := m.environments(ctx, rend)
	if err != nil {
		return nil, err
	}
	verdict, err := m.peers.Compatibility.EvaluateUpgrade(ctx, packageVersion(ob, svc.Version, svc.BuiltIn), packageVersion(nb, toVersion, svc.BuiltIn), envs)
	if err != nil {
		return nil, err
	}
	return verdict.Results, nil
}

// runHook dispatches the service's pre-check hook on every Supervisor the
// installed version runs on (or once, without Supervisor secrets, when it
// runs on none).
func (m *core) runHook(ctx context.Context, svc *lifecycle.Service, ob, nb *bundle.Bundle, toVersion string) (*HookReport, error) {
	res, err := m.repo.Resources(ctx, svc.ID)
	if err != nil {
		return nil, err
	}
	sups := slices.Clone(installedSupervisors(svc, res))
	if len(sups) == 0 {
		sups = []string{""}
	}
	var reqs []lifecycle.HookRequest
	for _, sup := range sups {
		req := lifecycle.HookRequest{
			SourcePackageYAML: ob.PackageYAML, TargetPackageYAML: nb.PackageYAML, Namespace: svc.Namespace,
			ServiceName: svc.Name, SourceVersion: svc.Version, TargetVersion: toVersion, Supervisor: sup,
			Secrets: map[string]map[string][]byte{},
		}
		if sup != "" {
			secrets, err := m.driver.Secrets(ctx, sup, svc.Namespace)
			if err != nil {
				return nil, err
			}
			maps.Copy(req.Secrets, secrets)
		}
		reqs = append(reqs, req)
	}
	results, err := m.peers.Precheck.DispatchHooks(ctx, reqs)
	if err != nil {
		return nil, err
	}
	report := &HookReport{}
	var failures []string
	for _, h := range results {
		report.Configured = report.Configured || h.Configured
		if report.Endpoint == "" {
			report.Endpoint = h.Endpoint
		}
		report.Results = append(report.Results, h.Results...)
		if h.Failure != "" {
			where := ""
			if h.Supervisor != "" {
				where = " (Supervisor " + h.Supervisor + ")"
			}
			failures = append(failures, h.Failure+where)
		}
		report.Blocked = report.Blocked || h.Blocked
	}
	report.Failure = strings.Join(failures, "; ")
	return report, nil
}
