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

// resultDetails turns compatibility and hook results into error details;
// ERRORs block. A hook result names the Supervisors that answered it.
func resultDetails(results []lifecycle.CheckResult) (details []lifecycle.ErrorDetail, blockers []string) {
	for _, res := range results {
		sev := lifecycle.SeverityInfo
		msg := res.Message
		if res.Kind == KindHook {
			msg = "pre-check hook: " + msg
			if res.Subject != "" {
				msg = "pre-check hook on " + res.Subject + ": " + res.Message
			}
		}
		switch strings.ToUpper(res.Severity) {
		case "ERROR":
			sev = lifecycle.SeverityError
			blockers = append(blockers, msg)
		case "WARNING":
			sev = lifecycle.SeverityWarn
		}
		details = append(details, lifecycle.ErrorDetail{Type: lifecycle.ErrTypeInstall, Severity: sev, Message: msg})
	}
	return details, blockers
}

// KindHook is the kind of a pre-check hook's results.
const KindHook = "HOOK"

// CheckInstall evaluates the install constraints; it returns the WARNING
// and INFO results it noted on the service (the operation keeps them too).
func CheckInstall(ctx context.Context, cp CheckPorts, w Writer, svc *lifecycle.Service, b *bundle.Bundle, rend *Rendered) ([]lifecycle.ErrorDetail, error) {
	envs, err := Environments(ctx, cp.Inventory, rend)
	if err != nil {
		return nil, err
	}
	verdict, err := cp.Compatibility.EvaluateInstall(ctx, PackageVersion(b, svc.Version, svc.BuiltIn), envs)
	if err != nil {
		return nil, err
	}
	details, blockers := resultDetails(verdict.Results)
	notes := nonErrors(details)
	if _, err := w.Mutate(ctx, svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.ErrorDetails = append(lifecycle.WithoutType(s.ErrorDetails, lifecycle.ErrTypeInstall), notes...)
		return nil
	}); err != nil {
		return nil, err
	}
	if verdict.Blocked || len(blockers) > 0 {
		return notes, lifecycle.BlockedWith(lifecycle.ErrTypeInstall, fmt.Errorf("compatibility check failed: %s", strings.Join(blockers, "; ")), details)
	}
	return notes, nil
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

// NoteResults keeps WARNING/INFO results visible and blocks on ERRORs; it
// returns the WARNING and INFO details it noted (the operation's record
// keeps them). A blocked operation shows every result (docs/decisions.md,
// "A blocked upgrade shows everything"): the failure's message lists them
// all, and each is its own errorDetail, so an administrator sees the
// warnings too. Noting the same results again (a step run again after a
// restart) adds nothing.
func NoteResults(ctx context.Context, w Writer, id string, results []lifecycle.CheckResult, what string) ([]lifecycle.ErrorDetail, error) {
	details, blockers := resultDetails(results)
	notes := nonErrors(details)
	if _, err := w.Mutate(ctx, id, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.ErrorDetails = lifecycle.AddDetails(s.ErrorDetails, notes...)
		return nil
	}); err != nil {
		return nil, err
	}
	if len(blockers) > 0 {
		all := make([]string, len(details))
		for i, d := range details {
			all[i] = d.Severity + " " + d.Message
		}
		return notes, lifecycle.BlockedWith(lifecycle.ErrTypeInstall, fmt.Errorf("%s: %s", what, strings.Join(all, "; ")), details)
	}
	return notes, nil
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
	return bySupervisor(results), nil
}

// RunHookOnce dispatches the pre-check hook once on each of sups (none:
// once, without Supervisor secrets) and returns both RunHook's folded
// report and RunHookOn's report per Supervisor, so a plan that shows both
// asks each Supervisor once.
func RunHookOnce(ctx context.Context, hp HookPorts, svc *lifecycle.Service, ob, nb *bundle.Bundle, toVersion string, sups []string) (*lifecycle.HookReport, map[string]*lifecycle.HookReport, error) {
	if len(sups) == 0 {
		sups = []string{""}
	}
	results, err := dispatchHooks(ctx, hp, svc, ob, nb, toVersion, sups)
	if err != nil {
		return nil, nil, err
	}
	return hookReport(results), bySupervisor(results), nil
}

// bySupervisor is each Supervisor's own report of the hook's answers.
func bySupervisor(results []lifecycle.HookResult) map[string]*lifecycle.HookReport {
	out := make(map[string]*lifecycle.HookReport, len(results))
	for _, h := range results {
		out[h.Supervisor] = hookReport([]lifecycle.HookResult{h})
	}
	return out
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

// hookReport folds the hook's answers into one report. Identical results
// from several Supervisors become one, whose Subject lists them (empty
// when the hook ran without a Supervisor).
func hookReport(results []lifecycle.HookResult) *lifecycle.HookReport {
	report := &lifecycle.HookReport{}
	var failures []string
	type key struct{ sev, msg, kind, source string }
	index := map[key]int{}
	subjects := map[int][]string{}
	for _, h := range results {
		report.Configured = report.Configured || h.Configured
		if report.Endpoint == "" {
			report.Endpoint = h.Endpoint
		}
		for _, res := range h.Results {
			k := key{strings.ToUpper(res.Severity), res.Message, res.Kind, res.Source}
			i, ok := index[k]
			if !ok {
				i = len(report.Results)
				index[k] = i
				res.Subject = ""
				report.Results = append(report.Results, res)
			}
			if h.Supervisor != "" && !slices.Contains(subjects[i], h.Supervisor) {
				subjects[i] = append(subjects[i], h.Supervisor)
			}
		}
		if h.Failure != "" {
			where := ""
			if h.Supervisor != "" {
				where = " (Supervisor " + h.Supervisor + ")"
			}
			failures = append(failures, h.Failure+where)
		}
		report.Blocked = report.Blocked || h.Blocked
	}
	for i, subj := range subjects {
		slices.Sort(subj)
		report.Results[i].Subject = strings.Join(subj, ", ")
	}
	report.Failure = strings.Join(failures, "; ")
	return report
}
