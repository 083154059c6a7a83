package vcfctl

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

// rolloutCmds are the commands about fleet rollouts: a service's rollout
// (get, approve, pause, resume, abort), the provider's rollout strategies
// and a version's quarantine.
type rolloutCmds struct {
	sess *session
	out  *printer
}

func (rc rolloutCmds) rolloutCmd() *cobra.Command {
	c := group("rollout", "Follow and steer a service's fleet rollout; the provider's rollout strategies", "rollouts")
	c.AddCommand(rc.getCmd(),
		rc.actionCmd("approve", "Approve the wave waiting for an administrator's approval",
			"override", "also override the ERRORs of the wave's gates, for this reason (recorded in the history)"),
		rc.actionCmd("pause", "Hold the running rollout before its next move", "", ""),
		rc.actionCmd("resume", "Let a paused rollout go on (a blocked wave checks its gates again)", "", ""),
		rc.actionCmd("abort", "Stop the rollout and roll back every target it moved (the version is quarantined)",
			"reason", "why (recorded in the history and in the quarantine)"),
		rc.strategiesCmd())
	return c
}

func (rc rolloutCmds) getCmd() *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:               "get SERVICE [-o table|json|yaml]",
		Short:             "Show the service's running (or last) rollout: its waves and every target",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: rc.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			return rc.sess.withService(cmd, args[0], func(cl *api.Client, id string) error {
				raw, err := cl.Do(cmd.Context(), http.MethodGet, servicePath(id, "rollout"), nil)
				if err != nil {
					return err
				}
				if output != formatTable {
					return rc.out.writeRaw(output, raw)
				}
				var r lifecyclev1.Rollout
				if err := decode(raw, &r); err != nil {
					return err
				}
				writeRollout(rc.out.io.Out, &r, rc.out.colour())
				return nil
			})
		},
	}
	outputFlag(c, &output, formatTable, formatJSON, formatYAML)
	return c
}

// rolloutDone says what an action did, from the rollout it answers.
var rolloutDone = map[string]string{
	"approve": "Approved wave %[3]s of the rollout of %[1]s to %[2]s",
	"pause":   "Pause of the rollout of %[1]s to %[2]s recorded: it holds before its next move",
	"resume":  "Resume of the rollout of %[1]s to %[2]s recorded: it goes on",
	"abort":   "Abort of the rollout of %[1]s to %[2]s recorded: every target it moved rolls back to %[4]s",
}

// actionCmd is approve, pause, resume or abort; flag (with its body
// field) is the reason the action takes, if any.
func (rc rolloutCmds) actionCmd(name, short, flag, help string) *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:               name + " SERVICE",
		Short:             short,
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: rc.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			return rc.sess.withService(cmd, args[0], func(cl *api.Client, id string) error {
				body := map[string]any{}
				switch flag {
				case "override":
					body["overrideReason"] = reason
				case "reason":
					body["reason"] = reason
				}
				raw, err := cl.Do(cmd.Context(), http.MethodPost, servicePath(id, "rollout", name), body)
				if err != nil {
					return err
				}
				var r lifecyclev1.Rollout
				if err := decode(raw, &r); err != nil {
					return err
				}
				rc.out.printf(rolloutDone[name]+"\n", id, r.GetToVersion(), waveName(&r, r.GetWave()), r.GetFromVersion())
				return nil
			})
		},
	}
	if flag != "" {
		c.Flags().StringVar(&reason, flag, "", help)
	}
	return c
}

// waveName is "2 (rest)": a wave's number and name.
func waveName(r *lifecyclev1.Rollout, wave int32) string {
	text := fmt.Sprint(wave)
	if i := int(wave) - 1; i >= 0 && i < len(r.GetWaves()) && r.GetWaves()[i].GetName() != "" {
		text += " (" + r.GetWaves()[i].GetName() + ")"
	}
	return text
}

func (rc rolloutCmds) strategiesCmd() *cobra.Command {
	c := group("strategies", "The provider's rollout strategies and the default every upgrade uses")
	var output string
	get := &cobra.Command{
		Use:   "get [-o yaml|json]",
		Short: "Print the provider's rollout strategies and default",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := rc.sess.client()
			if err != nil {
				return err
			}
			raw, err := cl.Do(cmd.Context(), http.MethodGet, "/v2/rollout-strategies", nil)
			if err != nil {
				return err
			}
			return rc.out.writeRaw(output, raw)
		},
	}
	outputFlag(get, &output, formatYAML, formatJSON)
	set := &cobra.Command{
		Use:   "set FILE",
		Short: "Replace the provider's rollout strategies and default with FILE (YAML or JSON)",
		Long: "Replace the provider's rollout strategies with FILE, YAML or JSON:\n" +
			"  strategies: [{name: canary-first, waves: [...]}, ...]\n" +
			"  defaultRollout: canary-first   # every upgrade that names none rolls out so (\"\": all at once)",
		Args: exactArgs("FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var s lifecyclev1.RolloutStrategies
			pf, err := readProtoFile(args[0], &s, strategyChecks)
			if err != nil {
				return err
			}
			body, err := protojson.Marshal(&s)
			if err != nil {
				return err
			}
			cl, err := rc.sess.client()
			if err != nil {
				return err
			}
			raw, err := cl.Do(cmd.Context(), http.MethodPut, "/v2/rollout-strategies", body)
			if err != nil {
				return pf.place(err, "")
			}
			var got lifecyclev1.RolloutStrategies
			if err := decode(raw, &got); err != nil {
				return err
			}
			rc.out.printf("Rollout strategies replaced: %d strateg%s, default %s\n", len(got.GetStrategies()),
				plural(len(got.GetStrategies()), "y", "ies"), orDash(got.GetDefaultRollout()))
			return nil
		},
	}
	c.AddCommand(get, set)
	return c
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// strategyChecks are the checks of a strategy's text fields vcfctl makes
// before sending it, so the error names the file's line; the server
// checks the rest.
var strategyChecks = map[string]func(string) error{
	"soak":        checkDuration,
	"gateTimeout": checkDuration,
	"onFailure": func(s string) error {
		if s != "rollback" && s != "pause" {
			return fmt.Errorf("%q: want rollback (the default) or pause", s)
		}
		return nil
	},
}

func checkDuration(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (e.g. 90s, 10m, 1h30m)", s)
	}
	if d < 0 {
		return fmt.Errorf("%q must not be negative", s)
	}
	return nil
}

// readStrategy reads a --rollout file: one strategy, YAML or JSON.
func readStrategy(path string) (*lifecyclev1.RolloutStrategy, *protoFile, error) {
	var s lifecyclev1.RolloutStrategy
	pf, err := readProtoFile(path, &s, strategyChecks)
	if err != nil {
		return nil, nil, fmt.Errorf("--rollout: %w", err)
	}
	if len(s.GetWaves()) == 0 {
		return nil, nil, fmt.Errorf("--rollout: %s: a strategy needs at least one wave (waves: [{name: canary, regions: [...]}, {name: rest, rest: true}])", path)
	}
	return &s, pf, nil
}

// quarantineCmd and clearCmd are 'vcfctl version quarantine|clear'.
func (rc rolloutCmds) quarantineCmd() *cobra.Command {
	var reason string
	c := &cobra.Command{
		Use:               "quarantine NAME VERSION --reason TEXT",
		Short:             "Quarantine a registered version: automatic upgrades skip it, upgrades to it are refused",
		Args:              exactArgs("NAME", "VERSION"),
		ValidArgsFunction: rc.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			if reason == "" {
				return usageErr("--reason is required: say why the version is quarantined")
			}
			v, err := rc.quarantine(cmd, http.MethodPost, args[0], args[1], map[string]any{"reason": reason})
			if err != nil {
				return err
			}
			rc.out.printf("Version %s of %s quarantined: %s (automatic upgrades skip it; 'vcfctl version clear %s %s' clears it)\n",
				v.GetVersion(), v.GetName(), v.GetQuarantine().GetReason(), v.GetName(), v.GetVersion())
			return nil
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why the version is quarantined (required)")
	return c
}

func (rc rolloutCmds) clearCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "clear NAME VERSION",
		Short:             "Clear a version's quarantine: it may be upgraded to again",
		Args:              exactArgs("NAME", "VERSION"),
		ValidArgsFunction: rc.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, err := rc.quarantine(cmd, http.MethodDelete, args[0], args[1], nil)
			if err != nil {
				return err
			}
			rc.out.printf("Version %s of %s cleared: it may be upgraded to again\n", v.GetVersion(), v.GetName())
			return nil
		},
	}
}

// quarantine sets (POST) or clears (DELETE) a version's quarantine.
func (rc rolloutCmds) quarantine(cmd *cobra.Command, method, name, version string, body any) (*lifecyclev1.ServiceVersion, error) {
	cl, err := rc.sess.client()
	if err != nil {
		return nil, err
	}
	path := "/v2/vcf-service-versions/" + url.PathEscape(name) + "/" + url.PathEscape(version) + "/quarantine"
	raw, err := cl.Do(cmd.Context(), method, path, body)
	if err != nil {
		return nil, err
	}
	var v lifecyclev1.ServiceVersion
	if err := decode(raw, &v); err != nil {
		return nil, err
	}
	return &v, nil
}
