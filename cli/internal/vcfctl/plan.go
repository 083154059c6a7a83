package vcfctl

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

func (sc serviceChanges) planCmd() *cobra.Command {
	var o upgradeOpts
	var output string
	var store bool
	c := &cobra.Command{
		Use:   "plan SERVICE (--source URL | --version VERSION) [--rollout FILE | --strategy NAME | --all-at-once] [--store [--accept-eula] [--accept-signatures] [--accept-plan-grants]] [-o table|json|yaml]",
		Short: "Preview an upgrade: version path, checks, hook results and resource changes with diffs",
		Long: "Preview an upgrade without changing anything. Exits 3 when the upgrade would be blocked,\n" +
			"so scripts can gate an upgrade on its plan.\n\n" +
			"When the upgrade rolls out in waves (--rollout FILE, --strategy NAME, or the service's or the\n" +
			"provider's default) the plan has a line per Supervisor: its wave, when its maintenance window\n" +
			"opens, and what blocks it. --store keeps an allowed plan (24 hours), with what its approval\n" +
			"accepts of the new version (--accept-eula, --accept-signatures, --accept-plan-grants): 'vcfctl service upgrade\n" +
			"SERVICE --plan ID' executes it as approved, and is refused if the service, the inventory or\n" +
			"the catalog changed since.",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: sc.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (o.source == "") == (o.version == "") {
				return usageErr("give exactly one of --source URL and --version VERSION (a registered version)")
			}
			if n := btoi(o.rollout != "") + btoi(o.strategy != "") + btoi(o.allAtOnce); n > 1 {
				return usageErr("give at most one of --rollout FILE, --strategy NAME and --all-at-once")
			}
			rollout, file, err := rolloutRequest(o)
			if err != nil {
				return err
			}
			body := map[string]any{"source": o.source, "targetVersion": o.version, "store": store}
			if rollout != nil {
				body["rollout"] = rollout
			}
			accepting := o.eula || o.signatures || o.planGrants
			if accepting && !store {
				return usageErr("--accept-eula, --accept-signatures and --accept-plan-grants go with --store: the kept plan's approval accepts them")
			}
			return sc.sess.withService(cmd, args[0], func(cl *api.Client, id string) error {
				// A plan kept without accepting what the new version changes could
				// never execute: vcfctl asks first and refuses that (exit 2).
				if store {
					if err := sc.planAcceptance(cmd.Context(), cl, id, o, body); err != nil {
						return file.place(err, "rollout.")
					}
				}
				raw, err := cl.Do(cmd.Context(), http.MethodPost, servicePath(id, "upgrade-plan"), body)
				if err != nil {
					return file.place(err, "rollout.")
				}
				var p lifecyclev1.UpgradePlan
				if err := decode(raw, &p); err != nil {
					return err
				}
				if output != formatTable {
					err = sc.out.writeRaw(output, raw)
				} else {
					writePlan(sc.out.io.Out, &p, sc.out.colour())
					writeFleet(sc.out.io.Out, &p, sc.out.colour())
					sc.keptPlan(&p, store)
				}
				if err == nil && !p.GetAllowed() {
					return errBlocked
				}
				return err
			})
		},
	}
	c.Flags().StringVar(&o.source, "source", "", "bundle URL of the version to preview")
	c.Flags().StringVar(&o.version, "version", "", "a registered catalog version to preview instead of --source")
	c.Flags().StringVar(&o.rollout, "rollout", "", "plan the upgrade as a rollout in waves: a strategy file, YAML or JSON")
	c.Flags().StringVar(&o.strategy, "strategy", "", "plan the upgrade as a rollout by a strategy of the provider's")
	c.Flags().BoolVar(&o.allAtOnce, "all-at-once", false, "plan the upgrade all at once, even when a default strategy applies")
	c.Flags().BoolVar(&store, "store", false, "keep an allowed plan so 'vcfctl service upgrade --plan ID' executes it as approved")
	c.Flags().BoolVar(&o.eula, "accept-eula", false, "with --store: the approval accepts the new version's EULA")
	c.Flags().BoolVar(&o.signatures, "accept-signatures", false, "with --store: the approval accepts the new version's signatures")
	c.Flags().BoolVar(&o.planGrants, "accept-plan-grants", false, "with --store: the approval accepts exactly the access grants the plan shows (printed)")
	outputFlag(c, &output, formatTable, formatJSON, formatYAML)
	return c
}

// planAcceptance asks for the plan once without keeping it, to learn what
// the new version changes, and adds to body what the kept plan's approval
// accepts (the grants exactly as this plan shows them).
func (sc serviceChanges) planAcceptance(ctx context.Context, cl *api.Client, id string, o upgradeOpts, body map[string]any) error {
	probe := maps.Clone(body)
	probe["store"] = false
	raw, err := cl.Do(ctx, http.MethodPost, servicePath(id, "upgrade-plan"), probe)
	if err != nil {
		return err
	}
	var p lifecyclev1.UpgradePlan
	if err := decode(raw, &p); err != nil {
		return err
	}
	return acceptFor(sc.out.report, &p, o, body)
}

// keptPlan says how to execute a stored plan, or why none was kept.
func (sc serviceChanges) keptPlan(p *lifecyclev1.UpgradePlan, store bool) {
	switch {
	case p.GetPlanId() != "":
		sc.out.report("\nPlan kept as %s until %s: 'vcfctl service upgrade %s --plan %s' executes it\n",
			p.GetPlanId(), p.GetExpiresAt(), sc.sess.subject, p.GetPlanId())
	case store:
		sc.out.report("\nThe plan is blocked: nothing was kept\n")
	}
}

// writeFleet renders a fleet plan's lines, one per Supervisor, by wave.
func writeFleet(w io.Writer, p *lifecyclev1.UpgradePlan, colour bool) {
	if len(p.GetTargets()) == 0 {
		return
	}
	_, _ = fmt.Fprintf(w, "\nFleet (rollout %s):\n", orDash(p.GetRolloutStrategy()))
	t := newTable("WAVE", "SUPERVISOR", "REGION", "WINDOW OPENS", "VERDICT", "REASONS")
	for _, tg := range p.GetTargets() {
		verdict := "allowed"
		if !tg.GetAllowed() {
			verdict = "BLOCKED"
		}
		t.row(fmt.Sprintf("%d %s", tg.GetWave(), tg.GetWaveName()), tg.GetSupervisor(), orDash(tg.GetRegion()),
			orDash(tg.GetWindowOpens()), verdict, orDash(strings.Join(tg.GetBlockingReasons(), "; ")))
	}
	t.write(w, colour)
}

// writePlan renders an upgrade plan for a person.
func writePlan(w io.Writer, p *lifecyclev1.UpgradePlan, colour bool) {
	verdict := "allowed"
	if !p.GetAllowed() {
		verdict = "BLOCKED"
	}
	if colour {
		verdict = statusColour(verdict) + verdict + "\x1b[0m"
	}
	_, _ = fmt.Fprintf(w, "Upgrade %s -> %s: %s\n", p.GetFromVersion(), p.GetToVersion(), verdict)
	path := append([]string{p.GetFromVersion()}, p.GetSuggestedPath()...)
	if len(p.GetSuggestedPath()) == 0 {
		path = append(path, p.GetToVersion())
	}
	_, _ = fmt.Fprintf(w, "Path: %s\n", strings.Join(path, " -> "))
	for _, r := range p.GetBlockingReasons() {
		_, _ = fmt.Fprintf(w, "  blocked: %s\n", r)
	}
	for _, e := range p.GetConfigurationErrors() {
		_, _ = fmt.Fprintf(w, "  configuration: %s\n", e)
	}
	if req := p.GetAcceptanceRequired(); len(req) > 0 {
		_, _ = fmt.Fprintf(w, "Accept: %s (upgrade --accept-eula, --accept-signatures, --accept-plan-grants)\n", strings.Join(req, ", "))
		for _, g := range p.GetAccessGrantsDiff().GetAdded() {
			_, _ = fmt.Fprintf(w, "  + grant %s %s %s\n", g.GetCategory(), g.GetKey(), g.GetValue())
		}
		for _, g := range p.GetAccessGrantsDiff().GetRemoved() {
			_, _ = fmt.Fprintf(w, "  - grant %s %s %s\n", g.GetCategory(), g.GetKey(), g.GetValue())
		}
	}

	_, _ = fmt.Fprintln(w, "\nChecks:")
	t := newTable("SEVERITY", "KIND", "SUBJECT", "MESSAGE")
	for _, c := range p.GetCompatibility() {
		t.row(c.GetSeverity(), c.GetKind(), orDash(c.GetSubject()), c.GetMessage())
	}
	addHook(t, p.GetHook())
	if d := p.GetDynamicChecks(); d != nil {
		t.row(severityOf(d.GetPreCheckStatus()), "PRECHECKS", "-", "dynamic pre-checks "+orDash(d.GetPreCheckStatus()))
		addResourceChecks(t, d.GetResourceChecks())
	}
	t.write(w, colour)

	_, _ = fmt.Fprintln(w, "\nResources:")
	rt := newTable("ACTION", "TYPE", "NAME", "SUPERVISOR")
	for _, r := range p.GetResources() {
		rt.row(r.GetAction(), r.GetType(), orDash(r.GetName()), orDash(r.GetSupervisor()))
	}
	rt.write(w, colour)
	for _, r := range p.GetResources() {
		if r.GetAction() != "reconfigured" {
			continue
		}
		_, _ = fmt.Fprintf(w, "\n%s %s%s:\n", r.GetType(), r.GetName(), onSupervisor(r.GetSupervisor()))
		writeDiff(w, r, colour)
	}
}

func addHook(t *table, h *lifecyclev1.HookReport) {
	if h == nil || !h.GetConfigured() {
		t.row("INFO", "HOOK", "-", "no pre-check hook declared")
		return
	}
	// A result names the Supervisors that answered it (identical answers
	// are one row); one from a hook run without a Supervisor, the endpoint.
	for _, r := range h.GetResults() {
		subject := r.GetSubject()
		if subject == "" {
			subject = h.GetEndpoint()
		}
		t.row(strings.ToUpper(r.GetSeverity()), "HOOK", orDash(subject), r.GetMessage())
	}
	if h.GetFailure() != "" {
		t.row("ERROR", "HOOK", orDash(h.GetEndpoint()), h.GetFailure())
	}
	if len(h.GetResults()) == 0 && h.GetFailure() == "" {
		t.row("INFO", "HOOK", orDash(h.GetEndpoint()), "hook reported nothing")
	}
}

func addResourceChecks(t *table, rcs []*commonv1.ResourceCheck) {
	for _, rc := range rcs {
		if rc.GetStatus() == "Passed" {
			continue
		}
		for _, c := range rc.GetChecks() {
			t.row(severityOf(c.GetStatus()), "PRECHECK", rc.GetType()+"/"+rc.GetName(), c.GetName()+": "+c.GetMessage())
		}
	}
}

func severityOf(status string) string {
	switch status {
	case "Failed":
		return "ERROR"
	case "Warning":
		return "WARNING"
	}
	return "INFO"
}

func onSupervisor(s string) string {
	if s == "" {
		return ""
	}
	return " on " + s
}

// writeDiff prints the unified diff of a reconfigured resource's YAML.
func writeDiff(w io.Writer, r *lifecyclev1.ResourcePlanEntry, colour bool) {
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: yamlLines(r.GetCurrentYaml()), B: yamlLines(r.GetPlannedYaml()),
		FromFile: "current", ToFile: "planned", Context: 3,
	})
	if err != nil || text == "" {
		_, _ = fmt.Fprintln(w, "  (no YAML difference reported)")
		return
	}
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		if colour {
			switch {
			case strings.HasPrefix(line, "+") && !strings.HasPrefix(line, "+++"):
				line = "\x1b[32m" + strings.TrimSuffix(line, "\n") + "\x1b[0m\n"
			case strings.HasPrefix(line, "-") && !strings.HasPrefix(line, "---"):
				line = "\x1b[31m" + strings.TrimSuffix(line, "\n") + "\x1b[0m\n"
			}
		}
		_, _ = io.WriteString(w, "  "+line)
	}
}

// yamlLines splits a document into lines that keep their newline.
func yamlLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
