package vcfctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

// platformCmds are the commands about the platform rather than one
// service: the inventory, the catalog, Supervisor upgrade checks and
// vcfctl's own version.
type platformCmds struct {
	sess *session
	out  *printer
}

func (sr serviceReads) watchCmd() *cobra.Command {
	var output, until string
	c := &cobra.Command{
		Use:               "watch SERVICE [--until STATUS] [-o table|json]",
		Short:             "Print one line per change of the service (json: the events as NDJSON) until it is deleted or interrupted, or reaches --until",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: sr.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			if until != "" {
				i := slices.IndexFunc(statuses, func(s string) bool { return strings.EqualFold(s, until) })
				if i < 0 {
					return usageErr("--until %q is not a status: want one of %s (any case)", until, strings.Join(statuses, ", "))
				}
				until = statuses[i]
			}
			return sr.sess.withService(cmd, args[0], func(cl *api.Client, id string) error {
				var last lifecyclev1.WatchServiceResponse
				err := cl.WatchUntil(cmd.Context(), id, until, func(raw json.RawMessage) error {
					if err := decode(raw, &last); err != nil {
						return err
					}
					if output == formatJSON {
						return sr.out.writeRaw(formatJSON, raw)
					}
					sr.out.printf("%s\n", watchLine(&last))
					return nil
				})
				if errors.Is(err, context.Canceled) {
					return nil // interrupted: the normal way to stop watching
				}
				if err == nil && until != "" && !strings.EqualFold(last.GetStatus(), until) {
					return &exitError{code: ExitBlocked, err: fmt.Errorf("the watch ended at status %s, not %s: %s", last.GetStatus(), until, last.GetOperation().GetMessage())}
				}
				return err
			})
		},
	}
	outputFlag(c, &output, formatTable, formatJSON)
	c.Flags().StringVar(&until, "until", "", "end when the service reaches this status (e.g. Healthy), or with exit 3 when its operation fails")
	_ = c.RegisterFlagCompletionFunc("until", cobra.FixedCompletions(statuses, cobra.ShellCompDirectiveNoFileComp))
	return c
}

// statuses are api.md's status values, the ones --until may name.
var statuses = []string{"Ready", "Unresolved", "Healthy", "Busy", "Unhealthy", "Maintenance", "Unavailable"}

// watchLine is one human line per event, with its timestamp.
func watchLine(ev *lifecyclev1.WatchServiceResponse) string {
	ts := ev.GetTime()
	if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
		ts = t.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	if ev.GetDeleted() {
		return ts + "  deleted"
	}
	parts := []string{ts, ev.GetStatus(), ev.GetLifecycleState(), "version " + ev.GetVersion()}
	if ev.GetPhase() != "" {
		parts = append(parts, "phase "+ev.GetPhase())
	}
	if op := ev.GetOperation(); op != nil && op.GetStep() != "" {
		parts = append(parts, operationText(op))
	}
	return strings.TrimSpace(strings.Join(parts, "  "))
}

func (pc platformCmds) inventoryCmd() *cobra.Command {
	c := group("inventory", "Read or replace the platform inventory (regions and Supervisors)")
	var output string
	get := &cobra.Command{
		Use:   "get [-o yaml|json]",
		Short: "Print the platform inventory",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := pc.sess.client()
			if err != nil {
				return err
			}
			raw, err := cl.Do(cmd.Context(), http.MethodGet, "/v2/inventory", nil)
			if err != nil {
				return err
			}
			return pc.out.writeRaw(output, raw)
		},
	}
	outputFlag(get, &output, formatYAML, formatJSON)
	set := &cobra.Command{
		Use:   "set FILE",
		Short: "Replace the platform inventory with FILE (YAML or JSON)",
		Args:  exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return fmt.Errorf("read inventory: %w", err)
			}
			body, err := yaml.YAMLToJSON(b)
			if err != nil {
				return fmt.Errorf("inventory %s is neither YAML nor JSON: %w", args[0], err)
			}
			cl, err := pc.sess.client()
			if err != nil {
				return err
			}
			raw, err := cl.Do(cmd.Context(), http.MethodPut, "/v2/inventory", body)
			if err != nil {
				return err
			}
			var resp lifecyclev1.PutPlatformInventoryResponse
			if err := decode(raw, &resp); err != nil {
				return err
			}
			pc.out.printf("Inventory replaced: %d region(s)\n", len(resp.GetInventory().GetRegions()))
			for _, s := range resp.GetSupervisorUpgrades() {
				pc.out.writeSupervisorCheck(s)
			}
			return nil
		},
	}
	c.AddCommand(get, set)
	return c
}

func (pc platformCmds) catalogCmd() *cobra.Command {
	c := group("catalog", "Registered bundle versions (upgrade targets)")
	var output, name string
	list := &cobra.Command{
		Use:   "list [--name NAME] [-o table|json|yaml]",
		Short: "List registered versions",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := pc.sess.client()
			if err != nil {
				return err
			}
			path := "/v2/vcf-service-versions"
			if name != "" {
				path += "?" + url.Values{"name": {name}}.Encode()
			}
			raw, err := cl.Do(cmd.Context(), http.MethodGet, path, nil)
			if err != nil {
				return err
			}
			if output != formatTable {
				return pc.out.writeRaw(output, raw)
			}
			var l lifecyclev1.ListServiceVersionsResponse
			if err := decode(raw, &l); err != nil {
				return err
			}
			t := newTable("NAME", "VERSION", "STATUS", "SOURCE", "MESSAGE")
			for _, v := range l.GetVersions() {
				status, msg := v.GetStatus(), v.GetMessage()
				if q := v.GetQuarantine(); q != nil {
					// Listing versions shows a quarantine first: upgrades to it are refused.
					status, msg = "Quarantined", strings.TrimSpace("since "+shortTime(q.GetAt())+" by "+orDash(q.GetBy())+": "+q.GetReason()+" "+msg)
				}
				t.row(v.GetName(), v.GetVersion(), status, v.GetSource(), msg)
			}
			t.write(pc.out.io.Out, pc.out.colour())
			return nil
		},
	}
	list.Flags().StringVar(&name, "name", "", "only this package name")
	outputFlag(list, &output, formatTable, formatJSON, formatYAML)
	add := &cobra.Command{
		Use:   "add SOURCE",
		Short: "Register a bundle version without installing it",
		Args:  exactArgs("SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := pc.sess.client()
			if err != nil {
				return err
			}
			raw, err := cl.Do(cmd.Context(), http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": args[0]})
			if err != nil {
				return err
			}
			var v lifecyclev1.ServiceVersion
			if err := decode(raw, &v); err != nil {
				return err
			}
			pc.out.printf("Registered %s (status %s)\n", orDash(strings.TrimSpace(v.GetName()+" "+v.GetVersion())), v.GetStatus())
			return nil
		},
	}
	c.AddCommand(list, add)
	return c
}

func (pc platformCmds) supervisorCmd() *cobra.Command {
	c := group("supervisor", "Supervisor upgrades against installed services")
	var version string
	check := &cobra.Command{
		Use:   "check SUPERVISOR --version VERSION",
		Short: "What a Supervisor upgrade would break (exit 3 when it is blocked)",
		Args:  exactArgs("SUPERVISOR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if version == "" {
				return usageErr("--version is required")
			}
			cl, err := pc.sess.client()
			if err != nil {
				return err
			}
			raw, err := cl.Do(cmd.Context(), http.MethodPost, "/v2/supervisors/"+url.PathEscape(args[0])+"/upgrade-check",
				map[string]any{"targetVersion": version})
			if err != nil {
				return err
			}
			var r lifecyclev1.CheckSupervisorUpgradeResponse
			if err := decode(raw, &r); err != nil {
				return err
			}
			pc.out.writeSupervisorCheck(&r)
			if r.GetBlocked() {
				return errBlocked
			}
			return nil
		},
	}
	check.Flags().StringVar(&version, "version", "", "the Supervisor's target version")
	c.AddCommand(check)
	return c
}

func (p *printer) writeSupervisorCheck(r *lifecyclev1.CheckSupervisorUpgradeResponse) {
	verdict := "allowed"
	if r.GetBlocked() {
		verdict = "BLOCKED"
	}
	p.printf("Supervisor %s -> %s: %s\n", r.GetSupervisor(), r.GetTargetVersion(), verdict)
	t := newTable("SERVICE", "VERSION", "SEVERITY", "MESSAGE")
	for _, s := range r.GetServices() {
		if len(s.GetResults()) == 0 {
			t.row(s.GetName(), s.GetVersion(), "INFO", "compatible")
		}
		for _, c := range s.GetResults() {
			t.row(s.GetName(), s.GetVersion(), c.GetSeverity(), c.GetMessage())
		}
	}
	t.write(p.io.Out, p.colour())
}

func (pc platformCmds) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print vcfctl's version; quarantine or clear a service version",
		Args:  exactArgs(),
		RunE: func(_ *cobra.Command, _ []string) error {
			pc.out.printf("%s\n", versionLine())
			return nil
		},
	}
}
