package steps

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Environments are the Supervisors the service runs on (serviceSupervisors),
// with their versions from the inventory the render used.
func Environments(ctx context.Context, inventory InventoryReader, rend *Rendered) ([]lifecycle.Environment, error) {
	inv := rend.Inventory
	if inv == nil {
		var err error
		if inv, err = inventory.Inventory(ctx); err != nil {
			return nil, err
		}
	}
	byName := SupervisorsByName(inv)
	var envs []lifecycle.Environment
	for _, name := range ServiceSupervisors(rend.Resources, inv) {
		sup, ok := byName[name]
		if !ok {
			return nil, lifecycle.Blocked(lifecycle.ErrTypeInstall, fmt.Errorf("rendered resources target Supervisor %q, which is not in the platform inventory (GET /v2/inventory)", name))
		}
		envs = append(envs, lifecycle.Environment{Supervisor: name, SupervisorVersion: sup.Version, KubernetesVersion: sup.KubernetesVersion})
	}
	return envs, nil
}

func SupervisorsByName(inv *lifecycle.Inventory) map[string]lifecycle.Supervisor {
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

func CheckInstall(ctx context.Context, cp CheckPorts, w Writer, svc *lifecycle.Service, b *bundle.Bundle, rend *Rendered) error {
	envs, err := Environments(ctx, cp.Inventory, rend)
	if err != nil {
		return err
	}
	verdict, err := cp.Compatibility.EvaluateInstall(ctx, PackageVersion(b, svc.Version, svc.BuiltIn), envs)
	if err != nil {
		return err
	}
	details, blockers := resultDetails(verdict.Results)
	if _, err := w.Mutate(ctx, svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.ErrorDetails = append(lifecycle.WithoutType(s.ErrorDetails, lifecycle.ErrTypeInstall), nonErrors(details)...)
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

// NoteResults keeps WARNING/INFO results visible and blocks on ERRORs.
// A blocked operation shows every result (docs/decisions.md, "A blocked
// upgrade shows everything"): the failure's message lists them all, and
// each is its own errorDetail, so an administrator sees the warnings too.
func NoteResults(ctx context.Context, w Writer, id string, results []lifecycle.CheckResult, what string) error {
	details, blockers := resultDetails(results)
	if _, err := w.Mutate(ctx, id, func(_ lifecycle.Tx, s *lifecycle.Service) error {
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

func UpgradeCompatibility(ctx context.Context, cp CheckPorts, svc *lifecycle.Service, ob, nb *bundle.Bundle, toVersion string, rend *Rendered) ([]lifecycle.CheckResult, error) {
	envs, err := Environments(ctx, cp.Inventory, rend)
	if err != nil {
		return nil, err
	}
	verdict, err := cp.Compatibility.EvaluateUpgrade(ctx, PackageVersion(ob, svc.Version, svc.BuiltIn), PackageVersion(nb, toVersion, svc.BuiltIn), envs)
	if err != nil {
		return nil, err
	}
	return verdict.Results, nil
}

// RunHook dispatches the service's pre-check hook on every Supervisor the
// installed version runs on (or once, without Supervisor secrets, when it
// runs on none).
func RunHook(ctx context.Context, hp HookPorts, svc *lifecycle.Service, ob, nb *bundle.Bundle, toVersion string) (*lifecycle.HookReport, error) {
	res, err := hp.Repo.Resources(ctx, svc.ID)
	if err != nil {
		return nil, err
	}
	sups := slices.Clone(InstalledSupervisors(svc, res))
	if len(sups) == 0 {
		sups = []string{""}
	}
	results, err := dispatchHooks(ctx, hp, svc, ob, nb, toVersion, sups)
	if err != nil {
		return nil, err
	}
	return hookReport(results), nil
}

// RunHookOn dispatches the pre-check hook on the given Supervisors (a
// rollout's wave) and returns each one's report.
func RunHookOn(ctx context.Context, hp HookPorts, svc *lifecycle.Service, ob, nb *bundle.Bundle, toVersion string, sups []string) (map[string]*lifecycle.HookReport, error) {
	results, err := dispatchHooks(ctx, hp, svc, ob, nb, toVersion, sups)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*lifecycle.HookReport, len(results))
	for _, h := range results {
		out[h.Supervisor] = hookReport([]lifecycle.HookResult{h})
	}
	return out, nil
}

// dispatchHooks calls the hook once per Supervisor ("" : without
// Supervisor secrets), with that Supervisor's secrets in the service's
// namespace.
func dispatchHooks(ctx context.Context, hp HookPorts, svc *lifecycle.Service, ob, nb *bundle.Bundle, toVersion string, sups []string) ([]lifecycle.HookResult, error) {
	var reqs []lifecycle.HookRequest
	for _, sup := range sups {
		req := lifecycle.HookRequest{
			SourcePackageYAML: ob.PackageYAML, TargetPackageYAML: nb.PackageYAML, Namespace: svc.Namespace,
			ServiceName: svc.Name, SourceVersion: svc.Version, TargetVersion: toVersion, Supervisor: sup,
			Secrets: map[string]map[string][]byte{},
		}
		if sup != "" {
			secrets, err := hp.Driver.Secrets(ctx, sup, svc.Namespace)
			if err != nil {
				return nil, err
			}
			maps.Copy(req.Secrets, secrets)
		}
		reqs = append(reqs, req)
	}
	return hp.Precheck.DispatchHooks(ctx, reqs)
}

// hookReport folds the hook's answers into one report.
func hookReport(results []lifecycle.HookResult) *lifecycle.HookReport {
	report := &lifecycle.HookReport{}
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
	return report
}
