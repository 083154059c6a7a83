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

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

type upgradeOpts struct {
	source, version string
	skipPlan        bool
	// What the upgrade accepts of the new version when it changes them.
	eula, signatures, planGrants bool
	wait                         waitOpts
}

func (a *App) upgradeCmd() *cobra.Command {
	var o upgradeOpts
	c := &cobra.Command{
		Use:   "upgrade SERVICE (--source URL | --version VERSION) [--skip-plan] [--accept-eula] [--accept-signatures] [--accept-plan-grants] [--wait [--timeout D] [--settle D]]",
		Short: "Upgrade the service: its plan first, then the upgrade",
		Long: "Upgrade the service to the bundle at --source, or to a version registered in the catalog\n" +
			"(--version). The upgrade's plan runs first: when it is blocked, vcfctl prints why and exits 3\n" +
			"without starting anything (--skip-plan starts the upgrade without it). When the new version\n" +
			"changes its EULA, signature set or access grants, the upgrade accepts them: --accept-eula,\n" +
			"--accept-signatures, --accept-plan-grants (the grants the plan shows, printed and accepted).",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: a.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (o.source == "") == (o.version == "") {
				return usageErr("give exactly one of --source URL and --version VERSION (a registered version, see 'vcfctl catalog list')")
			}
			return a.withService(cmd, args[0], func(cl *api.Client, id string) error { return a.upgrade(cmd.Context(), cl, id, o) })
		},
	}
	c.Flags().StringVar(&o.source, "source", "", "bundle URL of the new version")
	c.Flags().StringVar(&o.version, "version", "", "a version registered in the catalog ('vcfctl catalog list')")
	c.Flags().BoolVar(&o.skipPlan, "skip-plan", false, "start the upgrade without running its plan first")
	c.Flags().BoolVar(&o.eula, "accept-eula", false, "accept the new version's EULA")
	c.Flags().BoolVar(&o.signatures, "accept-signatures", false, "accept the new version's signatures")
	c.Flags().BoolVar(&o.planGrants, "accept-plan-grants", false, "accept exactly the access grants the upgrade plan shows (printed)")
	waitFlags(c, &o.wait, "follow the upgrade until Healthy (exit 3 if it fails, or the service stays Unhealthy)")
	return c
}

func (a *App) upgrade(ctx context.Context, cl *api.Client, id string, o upgradeOpts) error {
	source := o.source
	if o.version != "" {
		var err error
		if source, err = catalogSource(ctx, cl, id, o.version); err != nil {
			return err
		}
	}
	body := map[string]any{"source": source}
	if !o.skipPlan || o.planGrants {
		p, err := a.planGate(ctx, cl, id, source, o.skipPlan)
		if err != nil {
			return err
		}
		if err := acceptFor(a.report, p, o, body); err != nil {
			return err
		}
	} else if o.eula || o.signatures {
		body["accepted"] = map[string]any{"eula": o.eula, "signatures": o.signatures}
	}
	prev, err := a.before(ctx, cl, id, o.wait)
	if err != nil {
		return err
	}
	if _, err := cl.Do(ctx, http.MethodPatch, servicePath(id), body); err != nil {
		return err
	}
	a.report("Upgrade of %s to %s accepted\n", id, source)
	if !o.wait.wait {
		return nil
	}
	g := goalHealthy
	g.what = "upgrade"
	return a.wait(ctx, cl, id, prev, g, o.wait)
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
func (a *App) planGate(ctx context.Context, cl *api.Client, id, source string, skip bool) (*lifecyclev1.UpgradePlan, error) {
	raw, err := cl.Do(ctx, http.MethodPost, servicePath(id, "upgrade-plan"), map[string]any{"source": source})
	if err != nil {
		return nil, err
	}
	var p lifecyclev1.UpgradePlan
	if err := decode(raw, &p); err != nil {
		return nil, err
	}
	if p.GetAllowed() || skip {
		a.report("Plan %s -> %s: allowed\n", p.GetFromVersion(), p.GetToVersion())
		return &p, nil
	}
	a.errorf("The upgrade of %s from %s to %s is blocked by its plan; nothing was started:\n", id, p.GetFromVersion(), p.GetToVersion())
	for _, r := range p.GetBlockingReasons() {
		a.errorf("  blocked: %s\n", a.inVcfctlWords(r))
	}
	if len(p.GetSuggestedPath()) > 0 {
		a.errorf("  suggested path: %s\n", strings.Join(append([]string{p.GetFromVersion()}, p.GetSuggestedPath()...), " -> "))
	}
	a.errorf("('vcfctl service plan %s --source %s' shows the whole plan; --skip-plan starts the upgrade anyway)\n", a.subject, source)
	return nil, errBlocked
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

func (a *App) rollbackCmd() *cobra.Command {
	var to string
	var o waitOpts
	c := &cobra.Command{
		Use:   "rollback SERVICE [--to VERSION] [--wait [--timeout D] [--settle D]]",
		Short: "Roll the service back to the version its last upgrade replaced",
		Long: "Roll the service back to the version its last upgrade replaced (see 'vcfctl service history').\n" +
			"--to names that version explicitly; any other version is refused.",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: a.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withService(cmd, args[0], func(cl *api.Client, id string) error {
				prev, err := a.before(cmd.Context(), cl, id, o)
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
				a.report("Rollback of %s to %s accepted\n", id, target)
				if !o.wait {
					return nil
				}
				g := goalHealthy
				g.what = "rollback"
				return a.wait(cmd.Context(), cl, id, prev, g, o)
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

func (a *App) deleteCmd() *cobra.Command {
	var o deleteOpts
	c := &cobra.Command{
		Use:   "delete SERVICE [--force] [-y] [--ignore-not-found] [--wait [--timeout D]]",
		Short: "Delete the service and its resources",
		Long: "Delete the service and every resource it installed. On a terminal vcfctl asks first; --yes (-y)\n" +
			"answers for you, and is required when standard input is not a terminal.",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: a.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client()
			if err != nil {
				return err
			}
			a.subject = args[0]
			id, err := resolve(cmd.Context(), cl, args[0])
			if err != nil {
				return a.notFoundIsFine(err, args[0], o)
			}
			if err := a.confirmDelete(args[0], id, o); err != nil {
				return err
			}
			return a.deleteService(cmd.Context(), cl, id, o)
		},
	}
	c.Flags().BoolVar(&o.force, "force", false, "skip unreachable targets (their resources are recorded as orphaned)")
	c.Flags().BoolVarP(&o.yes, "yes", "y", false, "delete without asking")
	c.Flags().BoolVar(&o.ignoreNotFound, "ignore-not-found", false, "exit 0 when the service does not exist")
	waitFlags(c, &o.wait, "follow the deletion until the service is gone (exit 3 if it fails)")
	return c
}

func (a *App) deleteService(ctx context.Context, cl *api.Client, id string, o deleteOpts) error {
	prev, err := a.before(ctx, cl, id, o.wait)
	if err != nil {
		return a.notFoundIsFine(err, id, o)
	}
	path := fmt.Sprintf("%s?forceDelete=%t", servicePath(id), o.force)
	if _, err := cl.Do(ctx, http.MethodDelete, path, nil); err != nil {
		return a.notFoundIsFine(err, id, o)
	}
	a.report("Deletion of %s accepted\n", id)
	if !o.wait.wait {
		return nil
	}
	return a.wait(ctx, cl, id, prev, goalDeleted, o.wait)
}

// notFoundIsFine passes err on, unless it says the service does not
// exist and --ignore-not-found was given.
func (a *App) notFoundIsFine(err error, ref string, o deleteOpts) error {
	if o.ignoreNotFound && (api.IsNotFound(err) || isNoService(err)) {
		a.report("Service %s does not exist; nothing to delete\n", ref)
		return nil
	}
	return err
}

// confirmDelete asks on a terminal; elsewhere --yes must answer.
func (a *App) confirmDelete(ref, id string, o deleteOpts) error {
	if o.yes {
		return nil
	}
	f, ok := a.io.In.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) { //nolint:gosec // a file descriptor fits an int
		return usageErr("delete asks for confirmation: pass --yes (-y) when standard input is not a terminal")
	}
	name := ref
	if ref != id {
		name = fmt.Sprintf("%s (%s)", ref, id)
	}
	_, _ = fmt.Fprintf(a.io.Err, "Delete service %s and every resource it installed? [y/N] ", name)
	answer, _ := bufio.NewReader(a.io.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return fmt.Errorf("not deleted: the answer was not yes")
}
