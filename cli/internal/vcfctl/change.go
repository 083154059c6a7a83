package vcfctl

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"google.golang.org/protobuf/encoding/protojson"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

// serviceChanges are the commands that change a service (create,
// activate, pause, resume, deactivate, plan, upgrade, rollback, delete),
// each optionally followed to its end.
type serviceChanges struct {
	sess   *session
	out    *printer
	follow follower
}

type upgradeOpts struct {
	source, version string
	// rollout is the --rollout file: a strategy, YAML or JSON;
	// strategy names a stored one; allAtOnce asks for none.
	rollout, strategy   string
	allAtOnce, skipPlan bool
	// plan executes a stored plan ('vcfctl service plan --store').
	plan string
	// What the upgrade accepts of the new version when it changes them.
	eula, signatures, planGrants bool
	wait                         waitOpts
}

func (sc serviceChanges) upgradeCmd() *cobra.Command {
	var o upgradeOpts
	c := &cobra.Command{
		Use:   "upgrade SERVICE (--source URL | --version VERSION | --plan ID) [--rollout FILE] [--skip-plan] [--accept-eula] [--accept-signatures] [--accept-plan-grants] [--wait [--timeout D] [--settle D]]",
		Short: "Upgrade the service: its plan first, then the upgrade",
		Long: "Upgrade the service to the bundle at --source, or to a version registered in the catalog\n" +
			"(--version). The upgrade's plan runs first: when it is blocked, vcfctl prints why and exits 3\n" +
			"without starting anything (--skip-plan starts the upgrade without it). When the new version\n" +
			"changes its EULA, signature set or access grants, the upgrade accepts them: --accept-eula,\n" +
			"--accept-signatures, --accept-plan-grants (the grants the plan shows, printed and accepted).\n\n" +
			"--rollout FILE moves the service's Supervisors in waves (FILE: a strategy, YAML or JSON):\n" +
			"  waves:\n" +
			"    - {name: canary, regions: [us-west-1], soak: 10m}\n" +
			"    - {name: rest, rest: true, approval: true, maxConcurrent: 10, maxFailures: 1, onFailure: rollback}\n" +
			"  gateTimeout: 15m\n" +
			"--strategy NAME rolls out by one of the provider's strategies ('vcfctl rollout strategies get');\n" +
			"--all-at-once moves every Supervisor at once even when a default strategy applies.\n" +
			"With --wait a rollout shows each wave (done, failed, waiting for a window, waiting for approval)\n" +
			"until it ends: exit 0 once every target is Healthy on the new version, 3 when it rolled back\n" +
			"(the version is then quarantined) or its rollback was refused, 4 at --timeout.",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: sc.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.plan != "" {
				if o.source != "" || o.version != "" || o.rollout != "" || o.strategy != "" || o.allAtOnce {
					return usageErr("--plan executes a stored plan as it was approved: give no --source, --version, --rollout, --strategy or --all-at-once with it")
				}
				return sc.sess.withService(cmd, args[0], func(cl *api.Client, id string) error { return sc.upgradeByPlan(cmd.Context(), cl, id, o) })
			}
			if (o.source == "") == (o.version == "") {
				return usageErr("give exactly one of --source URL and --version VERSION (a registered version, see 'vcfctl catalog list'), or --plan ID")
			}
			if n := btoi(o.rollout != "") + btoi(o.strategy != "") + btoi(o.allAtOnce); n > 1 {
				return usageErr("give at most one of --rollout FILE, --strategy NAME and --all-at-once")
			}
			return sc.sess.withService(cmd, args[0], func(cl *api.Client, id string) error { return sc.upgrade(cmd.Context(), cl, id, o) })
		},
	}
	c.Flags().StringVar(&o.source, "source", "", "bundle URL of the new version")
	c.Flags().StringVar(&o.version, "version", "", "a version registered in the catalog ('vcfctl catalog list')")
	c.Flags().StringVar(&o.rollout, "rollout", "", "roll the upgrade out in waves: a strategy file, YAML or JSON (see --help)")
	c.Flags().StringVar(&o.strategy, "strategy", "", "roll the upgrade out by a strategy of the provider's ('vcfctl rollout strategies get')")
	c.Flags().BoolVar(&o.allAtOnce, "all-at-once", false, "move every Supervisor at once, even when a default strategy applies")
	c.Flags().BoolVar(&o.skipPlan, "skip-plan", false, "start the upgrade without running its plan first")
	c.Flags().BoolVar(&o.eula, "accept-eula", false, "accept the new version's EULA")
	c.Flags().BoolVar(&o.signatures, "accept-signatures", false, "accept the new version's signatures")
	c.Flags().BoolVar(&o.planGrants, "accept-plan-grants", false, "accept exactly the access grants the upgrade plan shows (printed)")
	c.Flags().StringVar(&o.plan, "plan", "", "execute a plan kept by 'vcfctl service plan --store' (its version and rollout, as approved)")
	waitFlags(c, &o.wait, "follow the upgrade until Healthy (exit 3 if it fails, or the service stays Unhealthy)")
	return c
}

func (sc serviceChanges) upgrade(ctx context.Context, cl *api.Client, id string, o upgradeOpts) error {
	body := map[string]any{}
	rollout, file, err := rolloutRequest(o)
	if err != nil {
		return err
	}
	if rollout != nil {
		body["rollout"] = rollout
	}
	source := o.source
	if o.version != "" {
		var err error
		if source, err = catalogSource(ctx, cl, id, o.version); err != nil {
			return err
		}
	}
	if err := sc.planAndAccept(ctx, cl, id, source, rollout, o, body); err != nil {
		return file.place(err, "rollout.")
	}
	body["source"] = source
	waves := rollout != nil && !o.allAtOnce
	return sc.startUpgrade(ctx, cl, id, body, file, source, waves, o.wait)
}

// upgradeByPlan executes a stored plan: its checks ran when it was made,
// and the server refuses it (409, saying what changed) when it is out of
// date.
func (sc serviceChanges) upgradeByPlan(ctx context.Context, cl *api.Client, id string, o upgradeOpts) error {
	return sc.startUpgrade(ctx, cl, id, map[string]any{"planId": o.plan}, nil, "plan "+o.plan, false, o.wait)
}

// startUpgrade sends the upgrade and, with --wait, follows it: its waves
// when it rolls out, else until Healthy.
func (sc serviceChanges) startUpgrade(ctx context.Context, cl *api.Client, id string, body map[string]any, file *protoFile, what string, waves bool, o waitOpts) error {
	prev, err := sc.follow.before(ctx, cl, id, o)
	if err != nil {
		return err
	}
	if _, err := cl.Do(ctx, http.MethodPatch, servicePath(id), body); err != nil {
		return file.place(err, "rollout.")
	}
	sc.out.report("Upgrade of %s to %s accepted\n", id, what)
	if !o.wait {
		if waves {
			sc.out.report("It rolls out in waves: follow it with 'vcfctl rollout get %s'\n", sc.sess.subject)
		}
		return nil
	}
	// The upgrade rolls out when it names a strategy, or the provider or
	// the service has a default one: then its waves are shown.
	st, err := serviceState(ctx, cl, id)
	if err != nil {
		return err
	}
	if op := st.GetOperation(); op.GetType() == "rollout" && op.GetId() != prev {
		return sc.follow.rolloutWait(ctx, cl, id, prev, op.GetId(), o)
	}
	g := goalHealthy
	g.what = "upgrade"
	return sc.follow.wait(ctx, cl, id, prev, g, o)
}

// rolloutRequest is the upgrade's rollout from its flags (nil: none
// named, a default may apply) and the strategy file it was read from.
func rolloutRequest(o upgradeOpts) (map[string]any, *protoFile, error) {
	switch {
	case o.allAtOnce:
		return map[string]any{"none": true}, nil, nil
	case o.strategy != "":
		return map[string]any{"name": o.strategy}, nil, nil
	case o.rollout == "":
		return nil, nil, nil
	}
	strategy, pf, err := readStrategy(o.rollout)
	if err != nil {
		return nil, nil, err
	}
	raw, err := protojson.Marshal(strategy)
	if err != nil {
		return nil, nil, err
	}
	return map[string]any{"strategy": json.RawMessage(raw)}, pf, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// catalogSource is the source of a registered version of the service.
func catalogSource(ctx context.Context, cl *api.Client, id, version string) (string, error) {
	raw, err := cl.Do(ctx, http.MethodGet, servicePath(id), nil)
	if err != nil {
		return "", err
	}
	var svc lifecyclev1.VcfService
	if err := decode(raw, &svc); err != nil {
		return "", err
	}
	raw, err = cl.Do(ctx, http.MethodGet, "/v2/vcf-service-versions?"+url.Values{"name": {svc.GetName()}}.Encode(), nil)
	if err != nil {
		return "", err
	}
	var l lifecyclev1.ListServiceVersionsResponse
	if err := decode(raw, &l); err != nil {
		return "", err
	}
	var known []string
	for _, v := range l.GetVersions() {
		if v.GetVersion() == version && v.GetStatus() == "Ready" {
			return v.GetSource(), nil
		}
		known = append(known, v.GetVersion())
	}
	return "", fmt.Errorf("version %s of %s is not registered (registered: %s): register it with 'vcfctl catalog add SOURCE', or give --source",
		version, svc.GetName(), orDash(strings.Join(known, ", ")))
}

// planGate runs the upgrade's plan: a blocked plan prints its reasons and
// ends with exit 3 before anything starts.
// The plan is asked with the upgrade's rollout, so a Supervisor that a
// wave's gate would stop blocks here already; skip returns the plan even
// when blocked (--skip-plan with --accept-plan-grants).
func (sc serviceChanges) planGate(ctx context.Context, cl *api.Client, id, source string, rollout map[string]any, skip bool) (*lifecyclev1.UpgradePlan, error) {
	body := map[string]any{"source": source}
	if rollout != nil {
		body["rollout"] = rollout
	}
	raw, err := cl.Do(ctx, http.MethodPost, servicePath(id, "upgrade-plan"), body)
	if err != nil {
		return nil, err
	}
	var p lifecyclev1.UpgradePlan
	if err := decode(raw, &p); err != nil {
		return nil, err
	}
	if p.GetAllowed() || skip {
		sc.out.report("Plan %s -> %s: allowed\n", p.GetFromVersion(), p.GetToVersion())
		return &p, nil
	}
	sc.out.errorf("The upgrade of %s from %s to %s is blocked by its plan; nothing was started:\n", id, p.GetFromVersion(), p.GetToVersion())
	for _, r := range p.GetBlockingReasons() {
		sc.out.errorf("  blocked: %s\n", sc.sess.inVcfctlWords(r))
	}
	if len(p.GetSuggestedPath()) > 0 {
		sc.out.errorf("  suggested path: %s\n", strings.Join(append([]string{p.GetFromVersion()}, p.GetSuggestedPath()...), " -> "))
	}
	sc.out.errorf("('vcfctl service plan %s --source %s' shows the whole plan; --skip-plan starts the upgrade anyway)\n", sc.sess.subject, source)
	return nil, errBlocked
}

// planAndAccept runs the upgrade's plan (unless --skip-plan; the plan's
// grants are needed for --accept-plan-grants) and adds to the body what
// the upgrade accepts of the new version.
func (sc serviceChanges) planAndAccept(ctx context.Context, cl *api.Client, id, source string, rollout map[string]any, o upgradeOpts, body map[string]any) error {
	if o.skipPlan && !o.planGrants {
		if o.eula || o.signatures {
			body["accepted"] = map[string]any{"eula": o.eula, "signatures": o.signatures}
		}
		return nil
	}
	p, err := sc.planGate(ctx, cl, id, source, rollout, o.skipPlan)
	if err != nil {
		return err
	}
	return acceptFor(sc.out.report, p, o, body)
}

// acceptFor adds to the upgrade's body what it accepts of the new
// version, refusing (usage, exit 2) when the plan says it changes
// something the flags do not accept.
func acceptFor(report func(string, ...any), p *lifecyclev1.UpgradePlan, o upgradeOpts, body map[string]any) error {
	flags := map[string]struct {
		set  bool
		flag string
	}{"eula": {o.eula, "--accept-eula"}, "signatures": {o.signatures, "--accept-signatures"}, "accessGrants": {o.planGrants, "--accept-plan-grants"}}
	var missing []string
	for _, r := range p.GetAcceptanceRequired() {
		if f, ok := flags[r]; ok && !f.set {
			missing = append(missing, f.flag)
		}
	}
	if len(missing) > 0 {
		return usageErr("version %s changes its %s: the upgrade accepts with %s ('vcfctl service plan' shows what changes)",
			p.GetToVersion(), strings.Join(p.GetAcceptanceRequired(), ", "), strings.Join(missing, " "))
	}
	if !o.eula && !o.signatures && !o.planGrants {
		return nil
	}
	acc := map[string]any{"eula": o.eula, "signatures": o.signatures}
	if o.planGrants {
		grants := p.GetAccessGrants().AsMap()
		shown, _ := json.Marshal(grants)
		report("Accepting the access grants of %s: %s\n", p.GetToVersion(), shown)
		acc["accessGrants"] = grants
	}
	body["accepted"] = acc
	return nil
}

func (sc serviceChanges) rollbackCmd() *cobra.Command {
	var to string
	var o waitOpts
	c := &cobra.Command{
		Use:   "rollback SERVICE [--to VERSION] [--wait [--timeout D] [--settle D]]",
		Short: "Roll the service back to the version its last upgrade replaced",
		Long: "Roll the service back to the version its last upgrade replaced (see 'vcfctl service history').\n" +
			"--to names that version explicitly; any other version is refused.",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: sc.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			return sc.sess.withService(cmd, args[0], func(cl *api.Client, id string) error {
				prev, err := sc.follow.before(cmd.Context(), cl, id, o)
				if err != nil {
					return err
				}
				body := map[string]any{}
				if to != "" {
					body["targetVersion"] = to
				}
				if _, err := cl.Do(cmd.Context(), http.MethodPost, servicePath(id, "rollback"), body); err != nil {
					return err
				}
				target := to
				if target == "" {
					target = "the previous version"
				}
				sc.out.report("Rollback of %s to %s accepted\n", id, target)
				if !o.wait {
					return nil
				}
				g := goalHealthy
				g.what = "rollback"
				return sc.follow.wait(cmd.Context(), cl, id, prev, g, o)
			})
		},
	}
	c.Flags().StringVar(&to, "to", "", "the version to roll back to (default: the version the last upgrade replaced)")
	waitFlags(c, &o, "follow the rollback until Healthy (exit 3 if it fails, or the service stays Unhealthy)")
	return c
}

type deleteOpts struct {
	force, yes, ignoreNotFound bool
	wait                       waitOpts
}

func (sc serviceChanges) deleteCmd() *cobra.Command {
	var o deleteOpts
	c := &cobra.Command{
		Use:   "delete SERVICE [--force] [-y] [--ignore-not-found] [--wait [--timeout D]]",
		Short: "Delete the service and its resources",
		Long: "Delete the service and every resource it installed. On a terminal vcfctl asks first; --yes (-y)\n" +
			"answers for you, and is required when standard input is not a terminal.",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: sc.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := sc.sess.client()
			if err != nil {
				return err
			}
			sc.sess.subject = args[0]
			id, err := resolve(cmd.Context(), cl, args[0])
			if err != nil {
				return sc.notFoundIsFine(err, args[0], o)
			}
			if err := sc.confirmDelete(args[0], id, o); err != nil {
				return err
			}
			return sc.deleteService(cmd.Context(), cl, id, o)
		},
	}
	c.Flags().BoolVar(&o.force, "force", false, "skip unreachable targets (their resources are recorded as orphaned)")
	c.Flags().BoolVarP(&o.yes, "yes", "y", false, "delete without asking")
	c.Flags().BoolVar(&o.ignoreNotFound, "ignore-not-found", false, "exit 0 when the service does not exist")
	waitFlags(c, &o.wait, "follow the deletion until the service is gone (exit 3 if it fails)")
	return c
}

func (sc serviceChanges) deleteService(ctx context.Context, cl *api.Client, id string, o deleteOpts) error {
	prev, err := sc.follow.before(ctx, cl, id, o.wait)
	if err != nil {
		return sc.notFoundIsFine(err, id, o)
	}
	path := fmt.Sprintf("%s?forceDelete=%t", servicePath(id), o.force)
	if _, err := cl.Do(ctx, http.MethodDelete, path, nil); err != nil {
		return sc.notFoundIsFine(err, id, o)
	}
	sc.out.report("Deletion of %s accepted\n", id)
	if !o.wait.wait {
		return nil
	}
	return sc.follow.wait(ctx, cl, id, prev, goalDeleted, o.wait)
}

// notFoundIsFine passes err on, unless it says the service does not
// exist and --ignore-not-found was given.
func (sc serviceChanges) notFoundIsFine(err error, ref string, o deleteOpts) error {
	if o.ignoreNotFound && (api.IsNotFound(err) || isNoService(err)) {
		sc.out.report("Service %s does not exist; nothing to delete\n", ref)
		return nil
	}
	return err
}

// confirmDelete asks on a terminal; elsewhere --yes must answer.
func (sc serviceChanges) confirmDelete(ref, id string, o deleteOpts) error {
	if o.yes {
		return nil
	}
	f, ok := sc.out.io.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) { //nolint:gosec // a file descriptor fits an int
		return usageErr("delete asks for confirmation: pass --yes (-y) when standard input is not a terminal")
	}
	name := ref
	if ref != id {
		name = fmt.Sprintf("%s (%s)", ref, id)
	}
	_, _ = fmt.Fprintf(sc.out.io.Err, "Delete service %s and every resource it installed? [y/N] ", name)
	answer, _ := bufio.NewReader(sc.out.io.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("not deleted: the answer was not yes")
}
