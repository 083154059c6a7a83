package vcfctl

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/spf13/cobra"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

func (sc serviceChanges) createCmd() *cobra.Command {
	var o waitOpts
	var output string
	c := &cobra.Command{
		Use:   "create SOURCE [--wait [--timeout D] [--settle D]] [-o json|yaml]",
		Short: "Register a service from a bundle (oci://… or https://….tar)",
		Long: "Register a service from a bundle. With -o json or -o yaml the service is printed as the\n" +
			"REST API returns it (after --wait: as it is at the end) and progress goes to standard error.",
		Args: exactArgs("SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, err := sc.sess.client()
			if err != nil {
				return err
			}
			if output != "" {
				sc.out.status = sc.out.io.Err
			}
			raw, err := cl.Do(cmd.Context(), http.MethodPost, "/v2/vcf-services", map[string]any{"source": args[0]})
			if err != nil {
				return err
			}
			var s lifecyclev1.VcfService
			if err := decode(raw, &s); err != nil {
				return err
			}
			sc.out.report("Created %s (status %s)\n", s.GetId(), s.GetStatus())
			if o.wait {
				if err := sc.follow.wait(cmd.Context(), cl, s.GetId(), "", goalCreated, o); err != nil {
					return err
				}
				if output != "" {
					if raw, err = cl.Do(cmd.Context(), http.MethodGet, servicePath(s.GetId()), nil); err != nil {
						return err
					}
				}
			}
			if output == "" {
				return nil
			}
			return sc.out.writeRaw(output, raw)
		},
	}
	waitFlags(c, &o, "follow the download until the service is Unresolved (exit 3 if it fails)")
	outputFlag(c, &output, "", formatJSON, formatYAML)
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

func (sr serviceReads) renderCmd() *cobra.Command {
	var valuesFile, output string
	c := &cobra.Command{
		Use:   "render SERVICE values|resources|grants|provenance [--values-file FILE] [-o json|yaml]",
		Short: "Preview effective values, resources, access grants or where each value came from",
		Long: "Preview what the service would install. values and resources print YAML as the server renders it\n" +
			"(-o json: the same as JSON; several resources become a JSON array); grants print JSON (-o yaml: YAML);\n" +
			"provenance prints a table (-o json|yaml: the REST document).",
		Args:              exactArgs("SERVICE", "WHAT"),
		ValidArgsFunction: sr.sess.completeRender,
		RunE: func(cmd *cobra.Command, args []string) error {
			route, ok := renderRoutes[args[1]]
			if !ok {
				return usageErr("render %q: choose values, resources, grants or provenance", args[1])
			}
			body, err := valuesBody(valuesFile)
			if err != nil {
				return err
			}
			return sr.sess.withService(cmd, args[0], func(cl *api.Client, id string) error {
				raw, err := cl.Do(cmd.Context(), http.MethodPost, servicePath(id, route), body)
				if err != nil {
					return err
				}
				return sr.writeRender(args[1], output, raw)
			})
		},
	}
	c.Flags().StringVar(&valuesFile, "values-file", "", "YAML file with the user's value overrides")
	outputFlag(c, &output, "", formatJSON, formatYAML)
	return c
}

func (sr serviceReads) writeRender(what, output string, raw []byte) error {
	switch {
	case (what == "values" || what == "resources") && output == formatJSON:
		return sr.out.writeYAMLAsJSON(what == "resources", raw)
	case what == "values" || what == "resources":
		_, err := sr.out.io.Out.Write(raw) // application/yaml, verbatim
		return err
	case output != "":
		return sr.out.writeRaw(output, raw)
	case what == "grants":
		_, err := sr.out.io.Out.Write(prettyJSON(raw))
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
	t.write(sr.out.io.Out, sr.out.colour())
	return nil
}

// writeYAMLAsJSON prints a YAML answer as indented JSON: one document as
// an object, a stream of documents (resources) as an array.
func (p *printer) writeYAMLAsJSON(stream bool, raw []byte) error {
	var docs []json.RawMessage
	dec := yamlv3.NewDecoder(bytes.NewReader(raw))
	for {
		var n yamlv3.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("the server's YAML cannot be read: %w", err)
		}
		if len(n.Content) == 0 || n.Content[0].Tag == "!!null" {
			continue // an empty document between separators
		}
		y, err := yamlv3.Marshal(&n)
		if err != nil {
			return fmt.Errorf("the server's YAML cannot be read: %w", err)
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			return fmt.Errorf("the server's YAML has no JSON form: %w", err)
		}
		docs = append(docs, j)
	}
	var out []byte
	var err error
	switch {
	case stream:
		out, err = json.Marshal(docs)
	case len(docs) == 1:
		out = docs[0]
	default:
		out = []byte("{}")
	}
	if err != nil {
		return err
	}
	_, err = p.io.Out.Write(prettyJSON(out))
	return err
}

type activateOpts struct {
	eula, signatures, rendered bool
	grantsFile, valuesFile     string
	wait                       waitOpts
}

func (sc serviceChanges) activateCmd() *cobra.Command {
	var o activateOpts
	c := &cobra.Command{
		Use:               "activate SERVICE --accept-eula --accept-signatures (--accept-grants FILE | --accept-rendered-grants) [--values-file FILE] [--wait [--timeout D] [--settle D]]",
		Short:             "Accept EULA, signatures and access grants and activate the service",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: sc.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !o.eula || !o.signatures {
				return usageErr("activation needs --accept-eula and --accept-signatures")
			}
			if (o.grantsFile == "") == !o.rendered {
				return usageErr("give exactly one of --accept-grants FILE and --accept-rendered-grants")
			}
			return sc.sess.withService(cmd, args[0], func(cl *api.Client, id string) error { return sc.activate(cmd, cl, id, o) })
		},
	}
	c.Flags().BoolVar(&o.eula, "accept-eula", false, "accept the EULA")
	c.Flags().BoolVar(&o.signatures, "accept-signatures", false, "accept the bundle's signatures")
	c.Flags().StringVar(&o.grantsFile, "accept-grants", "", "JSON or YAML file with the access grants to accept (as render grants prints them)")
	c.Flags().BoolVar(&o.rendered, "accept-rendered-grants", false, "fetch the grants from render-access-grants, print them and accept exactly those")
	c.Flags().StringVar(&o.valuesFile, "values-file", "", "YAML file with the user's value overrides")
	waitFlags(c, &o.wait, "follow the activation until Healthy (exit 3 if it fails, or the service stays Unhealthy)")
	return c
}

func (sc serviceChanges) activate(cmd *cobra.Command, cl *api.Client, id string, o activateOpts) error {
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
		sc.out.printf("Accepting these access grants:\n%s", prettyJSON(raw))
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
	prev, err := sc.follow.before(cmd.Context(), cl, id, o.wait)
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
	sc.out.report("Activation of %s accepted\n", id)
	if !o.wait.wait {
		return nil
	}
	g := goalHealthy
	g.what = "activate"
	return sc.follow.wait(cmd.Context(), cl, id, prev, g, o.wait)
}

// stateCmd is pause, resume or deactivate: a lifecycleState change.
func (sc serviceChanges) stateCmd(name, state, short string) *cobra.Command {
	var o waitOpts
	c := &cobra.Command{
		Use:               name + " SERVICE [--wait [--timeout D] [--settle D]]",
		Short:             short,
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: sc.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			return sc.sess.withService(cmd, args[0], func(cl *api.Client, id string) error {
				prev, err := sc.follow.before(cmd.Context(), cl, id, o)
				if err != nil {
					return err
				}
				if _, err := cl.Do(cmd.Context(), http.MethodPatch, servicePath(id), map[string]any{"lifecycleState": state}); err != nil {
					return err
				}
				sc.out.report("%s of %s accepted\n", name, id)
				if !o.wait {
					return nil
				}
				g := goalSettled
				if name == "resume" {
					g = goalHealthy
				}
				g.what = name
				return sc.follow.wait(cmd.Context(), cl, id, prev, g, o)
			})
		},
	}
	waitFlags(c, &o, "follow the operation until it ends (exit 3 if it fails, or the service stays Unhealthy)")
	return c
}
