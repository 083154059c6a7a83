package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// environments are the Supervisors the service runs on (serviceSupervisors),
// with their versions from the inventory the render used.
func (m *core) environments(ctx context.Context, rend *rendered) ([]*compatibilityv1.Environment, error) {
	inv := rend.Inventory
	if inv == nil {
		var err error
		if inv, err = m.repo.Inventory(ctx); err != nil {
			return nil, err
		}
	}
	byName := supervisorsByName(inv)
	var envs []*compatibilityv1.Environment
	for _, name := range serviceSupervisors(rend.Resources, inv) {
		sup, ok := byName[name]
		if !ok {
			return nil, blocked(ErrTypeInstall, fmt.Errorf("rendered resources target Supervisor %q, which is not in the platform inventory (GET /v2/inventory)", name))
		}
		envs = append(envs, &compatibilityv1.Environment{Supervisor: name, SupervisorVersion: sup.GetVersion(), KubernetesVersion: sup.GetKubernetesVersion()})
	}
	return envs, nil
}

func supervisorsByName(inv *commonv1.Inventory) map[string]*commonv1.Supervisor {
	out := map[string]*commonv1.Supervisor{}
	for _, r := range inv.GetRegions() {
		for _, s := range r.GetSupervisors() {
			out[s.GetName()] = s
			if s.GetId() != "" {
				out[s.GetId()] = s
			}
		}
	}
	return out
}

// resultDetails turns compatibility results into error details; ERRORs
// block.
func resultDetails(results []*commonv1.CheckResult) (details []ErrorDetail, blockers []string) {
	for _, res := range results {
		sev := SeverityInfo
		switch strings.ToUpper(res.GetSeverity()) {
		case "ERROR":
			sev = SeverityError
			blockers = append(blockers, res.GetMessage())
		case "WARNING":
			sev = SeverityWarn
		}
		details = append(details, ErrorDetail{Type: ErrTypeInstall, Severity: sev, Message: res.GetMessage()})
	}
	return details, blockers
}

func (m *core) checkInstall(ctx context.Context, svc *Service, b *bundle.Bundle, rend *rendered) error {
	envs, err := m.environments(ctx, rend)
	if err != nil {
		return err
	}
	resp, err := m.peers.Compatibility.EvaluateInstall(ctx, &compatibilityv1.EvaluateInstallRequest{
		Package: packageVersion(b, svc.Version, svc.BuiltIn), Environments: envs,
	})
	if err != nil {
		return peerError("compatibility", err)
	}
	details, blockers := resultDetails(resp.GetResults())
	if _, err := m.mutate(ctx, svc.ID, func(_ Tx, s *Service) error {
		s.ErrorDetails = append(withoutType(s.ErrorDetails, ErrTypeInstall), nonErrors(details)...)
		return nil
	}); err != nil {
		return err
	}
	if resp.GetBlocked() || len(blockers) > 0 {
		return blockedWith(ErrTypeInstall, fmt.Errorf("compatibility check failed: %s", strings.Join(blockers, "; ")), details)
	}
	return nil
}

func nonErrors(ds []ErrorDetail) []ErrorDetail {
	var out []ErrorDetail
	for _, d := range ds {
		if d.Severity != SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// noteResults keeps WARNING/INFO results visible and blocks on ERRORs.
// A blocked operation shows every result (docs/decisions.md, "A blocked
// upgrade shows everything"): the failure's message lists them all, and
// each is its own errorDetail, so an administrator sees the warnings too.
func (m *core) noteResults(ctx context.Context, id string, results []*commonv1.CheckResult, what string) error {
	details, blockers := resultDetails(results)
	if _, err := m.mutate(ctx, id, func(_ Tx, s *Service) error {
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
		return blockedWith(ErrTypeInstall, fmt.Errorf("%s: %s", what, strings.Join(all, "; ")), details)
	}
	return nil
}

func (m *core) upgradeCompatibility(ctx context.Context, svc *Service, ob, nb *bundle.Bundle, toVersion string, rend *rendered) ([]*commonv1.CheckResult, error) {
	envs, err := m.environments(ctx, rend)
	if err != nil {
		return nil, err
	}
	resp, err := m.peers.Compatibility.EvaluateUpgrade(ctx, &compatibilityv1.EvaluateUpgradeRequest{
		Installed:    packageVersion(ob, svc.Version, svc.BuiltIn),
		Target:       packageVersion(nb, toVersion, svc.BuiltIn),
		Environments: envs,
	})
	if err != nil {
		return nil, peerError("compatibility", err)
	}
	return resp.GetResults(), nil
}

// runHook dispatches the service's pre-check hook on every Supervisor the
// installed version runs on (or once, without Supervisor secrets, when it
// runs on none).
func (m *core) runHook(ctx context.Context, svc *Service, ob, nb *bundle.Bundle, toVersion string) (*HookReport, error) {
	res, err := m.repo.Resources(ctx, svc.ID)
	if err != nil {
		return nil, err
	}
	sups := slices.Clone(installedSupervisors(svc, res))
	if len(sups) == 0 {
		sups = []string{""}
	}
	var reqs []*precheckv1.DispatchHookRequest
	for _, sup := range sups {
		req := &precheckv1.DispatchHookRequest{
			SourcePackageYaml: ob.PackageYAML, TargetPackageYaml: nb.PackageYAML, Namespace: svc.Namespace,
			ServiceName: svc.Name, SourceVersion: svc.Version, TargetVersion: toVersion, Supervisor: sup,
			Secrets: map[string]*precheckv1.SecretData{},
		}
		if sup != "" {
			secrets, err := m.driver.Secrets(ctx, sup, svc.Namespace)
			if err != nil {
				return nil, err
			}
			for name, data := range secrets {
				req.Secrets[name] = &precheckv1.SecretData{Data: data}
			}
		}
		reqs = append(reqs, req)
	}
	resp, err := m.peers.Precheck.DispatchHooks(ctx, &precheckv1.DispatchHooksRequest{Requests: reqs})
	if err != nil {
		return nil, peerError("precheck", err)
	}
	report := &HookReport{}
	var failures []string
	for _, h := range resp.GetResults() {
		report.Configured = report.Configured || h.GetConfigured()
		if report.Endpoint == "" {
			report.Endpoint = h.GetEndpoint()
		}
		report.Results = append(report.Results, h.GetResults()...)
		if h.GetFailure() != "" {
			where := ""
			if h.GetSupervisor() != "" {
				where = " (Supervisor " + h.GetSupervisor() + ")"
			}
			failures = append(failures, h.GetFailure()+where)
		}
		report.Blocked = report.Blocked || h.GetBlocked()
	}
	report.Failure = strings.Join(failures, "; ")
	return report, nil
}
