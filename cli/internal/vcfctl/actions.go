package vcfctl

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

func (a *App) createCmd() *cobra.Command {
	var wait bool
	c := &cobra.Command{
		Use:   "create SOURCE [--wait]",
		Short: "Register a service from a bundle (oci://… or https://….tar)",
		Args:  exactArgs("SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := a.client()
			if err != nil {
				return err
			}
			raw, err := cl.Do(cmd.Context(), http.MethodPost, "/v2/vcf-services", map[string]any{"source": args[0]})
			if err != nil {
				return err
			}
			var s lifecyclev1.VcfService
			if err := decode(raw, &s); err != nil {
				return err
			}
			a.printf("Created %s (status %s)\n", s.GetId(), s.GetStatus())
			if !wait {
				return nil
			}
			return a.wait(cmd.Context(), cl, s.GetId(), "", goalCreated)
		},
	}
	c.Flags().BoolVar(&wait, "wait", false, "follow the download until the service is Unresolved (exit 3 if it fails)")
	return c
}

// readValuesFile reads a YAML values file into the base64 form the API takes.
func readValuesFile(path string) (string, error) {
	b, err := os.ReadFile(path) //nolint:gosec // the user names the file
	if err != nil {
		return "", fmt.Errorf("--values-file: %w", err)
	}
	var probe any
	if err := yaml.Unmarshal(b, &probe); err != nil {
		return "", fmt.Errorf("--values-file %s is not YAML: %w", path, err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// valuesBody is the render endpoints' Values body.
func valuesBody(valuesFile string) (map[string]any, error) {
	body := map[string]any{}
	if valuesFile != "" {
		v, err := readValuesFile(valuesFile)
		if err != nil {
			return nil, err
		}
		body["userOverwrite"] = v
	}
	return body, nil
}

var renderRoutes = map[string]string{
	"values":     "render-effective-values",
	"resources":  "render-resources",
	"grants":     "render-access-grants",
	"provenance": "render-value-provenance",
}

func (a *App) renderCmd() *cobra.Command {
	var valuesFile, output string
	c := &cobra.Command{
		Use:       "render SERVICE values|resources|grants|provenance [--values-file FILE]",
		Short:     "Preview effective values, resources, access grants or where each value came from",
		Args:      exactArgs("SERVICE", "WHAT"),
		ValidArgs: []string{"values", "resources", "grants", "provenance"},
		RunE: func(cmd *cobra.Command, args []string) error {
			route, ok := renderRoutes[args[1]]
			if !ok {
				return usageErr("render %q: choose values, resources, grants or provenance", args[1])
			}
			body, err := valuesBody(valuesFile)
			if err != nil {
				return err
			}
			return a.withService(cmd, args[0], func(cl *api.Client, id string) error {
				raw, err := cl.Do(cmd.Context(), http.MethodPost, servicePath(id, route), body)
				if err != nil {
					return err
				}
				return a.writeRender(args[1], output, raw)
			})
		},
	}
	c.Flags().StringVar(&valuesFile, "values-file", "", "YAML file with the user's value overrides")
	c.Flags().StringVarP(&output, "output", "o", "", "json|yaml for grants and provenance (values and resources are YAML)")
	return c
}

func (a *App) writeRender(what, output string, raw []byte) error {
	switch {
	case what == "values" || what == "resources":
		_, err := a.io.Out.Write(raw) // application/yaml, verbatim
		return err
	case output == formatJSON || output == formatYAML:
		return a.writeRaw(output, raw)
	case output != "":
		return usageErr("--output %q is not one of json, yaml", output)
	case what == "grants":
		_, err := a.io.Out.Write(prettyJSON(raw))
		return err
	}
	var p lifecyclev1.RenderValueProvenanceResponse
	if err := decode(raw, &p); err != nil {
		return err
	}
	t := newTable("PATH", "LAYER", "VALUE")
	for _, e := range p.GetEntries() {
		t.row(e.GetPath(), e.GetLayer(), e.GetValue())
	}
	t.write(a.io.Out, a.colour())
	return nil
}

type activateOpts struct {
	eula, signatures, rendered, wait bool
	grantsFile, valuesFile           string
}

func (a *App) activateCmd() *cobra.Command {
	var o activateOpts
	c := &cobra.Command{
		Use:   "activate SERVICE --accept-eula --accept-signatures (--accept-grants FILE | --accept-rendered-grants) [--values-file FILE] [--wait]",
		Short: "Accept EULA, signatures and access grants and activate the service",
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !o.eula || !o.signatures {
				return usageErr("activation needs --accept-eula and --accept-signatures")
			}
			if (o.grantsFile == "") == !o.rendered {
				return usageErr("give exactly one of --accept-grants FILE and --accept-rendered-grants")
			}
			return a.withService(cmd, args[0], func(cl *api.Client, id string) error { return a.activate(cmd, cl, id, o) })
		},
	}
	c.Flags().BoolVar(&o.eula, "accept-eula", false, "accept the EULA")
	c.Flags().BoolVar(&o.signatures, "accept-signatures", false, "accept the bundle's signatures")
	c.Flags().StringVar(&o.grantsFile, "accept-grants", "", "JSON or YAML file with the access grants to accept (as render grants prints them)")
	c.Flags().BoolVar(&o.rendered, "accept-rendered-grants", false, "fetch the grants from render-access-grants, print them and accept exactly those")
	c.Flags().StringVar(&o.valuesFile, "values-file", "", "YAML file with the user's value overrides")
	c.Flags().BoolVar(&o.wait, "wait", false, "follow the activation until Healthy (exit 3 if it ends Unhealthy or blocked)")
	return c
}

func (a *App) activate(cmd *cobra.Command, cl *api.Client, id string, o activateOpts) error {
	body, err := valuesBody(o.valuesFile)
	if err != nil {
		return err
	}
	var grants json.RawMessage
	if o.rendered {
		raw, err := cl.Do(cmd.Context(), http.MethodPost, servicePath(id, "render-access-grants"), body)
		if err != nil {
			return fmt.Errorf("render the access grants: %w", err)
		}
		a.printf("Accepting these access grants:\n%s", prettyJSON(raw))
		grants = raw
	} else {
		b, err := os.ReadFile(o.grantsFile)
		if err != nil {
			return fmt.Errorf("--accept-grants: %w", err)
		}
		if grants, err = yaml.YAMLToJSON(b); err != nil {
			return fmt.Errorf("--accept-grants %s is neither JSON nor YAML: %w", o.grantsFile, err)
		}
	}
	prev, err := a.before(cmd.Context(), cl, id, o.wait)
	if err != nil {
		return err
	}
	patch := map[string]any{
		"lifecycleState": "active",
		"accepted":       map[string]any{"eula": true, "signatures": true, "accessGrants": grants},
	}
	if len(body) > 0 {
		patch["values"] = body
	}
	if _, err := cl.Do(cmd.Context(), http.MethodPatch, servicePath(id), patch); err != nil {
		return err
	}
	a.printf("Activation of %s accepted\n", id)
	if !o.wait {
		return nil
	}
	g := goalHealthy
	g.what = "activate"
	return a.wait(cmd.Context(), cl, id, prev, g)
}

// stateCmd is pause, resume or deactivate: a lifecycleState change.
func (a *App) stateCmd(name, state, short string) *cobra.Command {
	var wait bool
	c := &cobra.Command{
		Use:   name + " SERVICE [--wait]",
		Short: short,
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withService(cmd, args[0], func(cl *api.Client, id string) error {
				prev, err := a.before(cmd.Context(), cl, id, wait)
				if err != nil {
					return err
				}
				if _, err := cl.Do(cmd.Context(), http.MethodPatch, servicePath(id), map[string]any{"lifecycleState": state}); err != nil {
					return err
				}
				a.printf("%s of %s accepted\n", name, id)
				if !wait {
					return nil
				}
				g := goalSettled
				if name == "resume" {
					g = goalHealthy
				}
				g.what = name
				return a.wait(cmd.Context(), cl, id, prev, g)
			})
		},
	}
	c.Flags().BoolVar(&wait, "wait", false, "follow the operation until it ends (exit 3 if it ends Unhealthy or blocked)")
	return c
}

func (a *App) upgradeCmd() *cobra.Command {
	var source string
	var wait bool
	c := &cobra.Command{
		Use:   "upgrade SERVICE --source URL [--wait]",
		Short: "Upgrade the service to the bundle at URL (preview it first with 'plan')",
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if source == "" {
				return usageErr("--source is required")
			}
			return a.withService(cmd, args[0], func(cl *api.Client, id string) error {
				prev, err := a.before(cmd.Context(), cl, id, wait)
				if err != nil {
					return err
				}
				if _, err := cl.Do(cmd.Context(), http.MethodPatch, servicePath(id), map[string]any{"source": source}); err != nil {
					return err
				}
				a.printf("Upgrade of %s to %s accepted\n", id, source)
				if !wait {
					return nil
				}
				g := goalHealthy
				g.what = "upgrade"
				return a.wait(cmd.Context(), cl, id, prev, g)
			})
		},
	}
	c.Flags().StringVar(&source, "source", "", "bundle URL of the new version")
	c.Flags().BoolVar(&wait, "wait", false, "follow the upgrade until Healthy (exit 3 if it is blocked or ends Unhealthy)")
	return c
}

func (a *App) rollbackCmd() *cobra.Command {
	var to string
	var wait bool
	c := &cobra.Command{
		Use:   "rollback SERVICE --to VERSION [--wait]",
		Short: "Roll the service back to a previous version",
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usageErr("--to is required (see 'vcfctl service history' for the versions)")
			}
			return a.withService(cmd, args[0], func(cl *api.Client, id string) error {
				prev, err := a.before(cmd.Context(), cl, id, wait)
				if err != nil {
					return err
				}
				if _, err := cl.Do(cmd.Context(), http.MethodPost, servicePath(id, "rollback"), map[string]any{"targetVersion": to}); err != nil {
					return err
				}
				a.printf("Rollback of %s to %s accepted\n", id, to)
				if !wait {
					return nil
				}
				g := goalHealthy
				g.what = "rollback"
				return a.wait(cmd.Context(), cl, id, prev, g)
			})
		},
	}
	c.Flags().StringVar(&to, "to", "", "version to roll back to")
	c.Flags().BoolVar(&wait, "wait", false, "follow the rollback until Healthy (exit 3 if it ends Unhealthy or blocked)")
	return c
}

func (a *App) deleteCmd() *cobra.Command {
	var force, wait bool
	c := &cobra.Command{
		Use:   "delete SERVICE [--force] [--wait]",
		Short: "Delete the service and its resources",
		Args:  exactArgs("SERVICE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.withService(cmd, args[0], func(cl *api.Client, id string) error {
				prev, err := a.before(cmd.Context(), cl, id, wait)
				if err != nil {
					return err
				}
				path := fmt.Sprintf("%s?forceDelete=%t", servicePath(id), force)
				if _, err := cl.Do(cmd.Context(), http.MethodDelete, path, nil); err != nil {
					return err
				}
				a.printf("Deletion of %s accepted\n", id)
				if !wait {
					return nil
				}
				return a.wait(cmd.Context(), cl, id, prev, goalDeleted)
			})
		},
	}
	c.Flags().BoolVar(&force, "force", false, "skip unreachable targets (their resources are recorded as orphaned)")
	c.Flags().BoolVar(&wait, "wait", false, "follow the deletion until the service is gone (exit 3 if it fails)")
	return c
}
