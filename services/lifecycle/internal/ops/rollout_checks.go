package ops

import (
	"context"
	"slices"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// gateResults are a wave's check results per Supervisor.
type gateResults struct {
	// cannot: the Supervisors a check could not run for (a peer or
	// target that does not answer), with why.
	cannot map[string]string
	errors map[string][]string
	notes  map[string][]lifecycle.ErrorDetail
	folded []foldedNote
}

// failOn records that check what could not run for sup: a peer or target
// that does not answer is waited for (cannot); any other error blocks sup.
// Before, an evaluation that failed for some Supervisors blocked them
// whatever the cause: a compatibility service restarting blocked the wave
// as if it had found an ERROR (TestRolloutGateWaitsForAPeerThatIsDown).
func (g *gateResults) failOn(sup, what string, err error) {
	if transient(err) {
		if _, ok := g.cannot[sup]; !ok {
			g.cannot[sup] = what + ": " + err.Error()
		}
		return
	}
	g.errors[sup] = append(g.errors[sup], what+": "+err.Error())
}

func (g *gateResults) add(sup string, r lifecycle.CheckResult, source string) {
	sev := ""
	switch strings.ToUpper(r.Severity) {
	case "ERROR":
		g.errors[sup] = append(g.errors[sup], source+": "+r.Message)
		return
	case "WARNING", "WARN":
		sev = lifecycle.SeverityWarn
	case "INFO":
		sev = lifecycle.SeverityInfo
	default:
		return
	}
	g.notes[sup] = append(g.notes[sup], lifecycle.ErrorDetail{Type: lifecycle.ErrTypeInstall, Severity: sev, Message: source + ": " + r.Message})
	k := noteKey{sev, source, r.Message}
	i := slices.IndexFunc(g.folded, func(f foldedNote) bool { return f.key == k })
	if i < 0 {
		g.folded = append(g.folded, foldedNote{key: k})
		i = len(g.folded) - 1
	}
	if !slices.Contains(g.folded[i].sups, sup) {
		g.folded[i].sups = append(g.folded[i].sups, sup)
	}
}

type noteKey struct{ sev, source, msg string }

// foldedNote is one WARNING or INFO of a wave's checks and the
// Supervisors it was reported for.
type foldedNote struct {
	key  noteKey
	sups []string
}

// foldedNotes are the wave's WARNINGs and INFOs for the operation's
// record: one per result, naming the Supervisors it was reported for.
func (g *gateResults) foldedNotes() []lifecycle.ErrorDetail {
	out := make([]lifecycle.ErrorDetail, 0, len(g.folded))
	for _, f := range g.folded {
		sups := slices.Clone(f.sups)
		slices.Sort(sups)
		out = append(out, lifecycle.ErrorDetail{Type: lifecycle.ErrTypeInstall, Severity: f.key.sev,
			Message: f.key.source + " on " + strings.Join(sups, ", ") + ": " + f.key.msg})
	}
	return out
}

// gateChecks runs, for the Supervisors of a wave, the checks an upgrade
// runs for the whole fleet: compatibility (once per distinct Supervisor
// and Kubernetes version), the pre-check hook on each Supervisor, and the
// dynamic pre-checks of the resources that move with them. A check that
// cannot run at all blocks every one of them with its reason, unless it
// could not reach its peer or target (then the gate waits: rollout_gate.go).
func gateChecks(ctx context.Context, d *Deps, r *run, u *upgradeVersions, sups []string) *gateResults {
	g := &gateResults{cannot: map[string]string{}, errors: map[string][]string{}, notes: map[string][]lifecycle.ErrorDetail{}}
	fail := func(what string, err error) {
		for _, s := range sups {
			g.failOn(s, what, err)
		}
	}
	rend, err := steps.RenderFor(ctx, d.Ports.Render(), d.Writer, r.cache(), u.next, u.nb)
	if err != nil {
		fail("render", err)
		return g
	}
	scoped := steps.ScopeRender(rend, sups)
	gateCompatibility(ctx, d, u, scoped, sups, g, fail)
	hooks, err := steps.RunHookOn(ctx, d.Ports.Hook(), u.old, u.ob, u.nb, u.to, sups)
	if err != nil {
		fail("pre-check hook", err)
	}
	for sup, h := range hooks {
		for _, res := range h.Results {
			g.add(sup, res, "pre-check hook")
		}
		if h.Failure != "" {
			g.errors[sup] = append(g.errors[sup], "pre-check hook: "+h.Failure)
		}
	}
	report, err := steps.DynamicPrechecks(ctx, d.Ports.Precheck(), u.next, u.nb, scoped, u.to)
	switch {
	case err != nil:
		fail("dynamic pre-checks", err)
	case report.Status == "Failed":
		for _, rc := range report.ResourceChecks {
			if rc.Status == "Failed" && slices.Contains(sups, rc.Supervisor) {
				g.errors[rc.Supervisor] = append(g.errors[rc.Supervisor], "dynamic pre-checks: "+steps.FailedChecks(&lifecycle.PreCheckReport{Status: "Failed", ResourceChecks: []lifecycle.ResourceCheck{rc}}))
			}
		}
	}
	return g
}

// gateCompatibility evaluates the upgrade once per distinct environment
// among sups and hands each result to the Supervisors of that
// environment.
func gateCompatibility(ctx context.Context, d *Deps, u *upgradeVersions, scoped *steps.Rendered, sups []string, g *gateResults, fail func(string, error)) {
	v, err := steps.CompatibilityBySupervisor(ctx, d.Repo, d.Ports.Peers.Compatibility, steps.PackageVersion(u.ob, u.old.Version, u.old.BuiltIn),
		steps.PackageVersion(u.nb, u.to, u.old.BuiltIn), scoped)
	if err != nil {
		fail("compatibility", err)
		return
	}
	for _, s := range sups {
		if err := v.Failed[s]; err != nil {
			g.failOn(s, "compatibility", err)
		}
		for _, res := range v.Results[s] {
			g.add(s, res, "compatibility")
		}
	}
}
