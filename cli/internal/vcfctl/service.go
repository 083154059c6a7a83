package vcfctl

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

// idPrefix is the URN prefix of every service id.
const idPrefix = "urn:vcloud:entity:broadcom:vcfService:"

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// decode reads REST JSON into a generated message, ignoring fields this
// build does not know (a newer server).
func decode(raw []byte, m proto.Message) error {
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, m); err != nil {
		return fmt.Errorf("decode the server's answer: %w", err)
	}
	return nil
}

func servicePath(id string, rest ...string) string {
	p := "/v2/vcf-services/" + url.PathEscape(id)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

// resolve turns SERVICE (a URN id, its uuid or a package name) into an id.
func resolve(ctx context.Context, cl *api.Client, ref string) (string, error) {
	switch {
	case strings.HasPrefix(ref, "urn:vcloud:"):
		return ref, nil
	case uuidRE.MatchString(ref):
		return idPrefix + strings.ToLower(ref), nil
	case ref == "":
		return "", usageErr("SERVICE is empty: give an id, a uuid or a package name")
	}
	q := url.Values{"filter": {"name==" + ref}, "pageSize": {"2"}}
	raw, err := cl.Do(ctx, http.MethodGet, "/v2/vcf-services?"+q.Encode(), nil)
	if err != nil {
		return "", fmt.Errorf("look up service %q: %w", ref, err)
	}
	var list lifecyclev1.ListServicesResponse
	if err := decode(raw, &list); err != nil {
		return "", err
	}
	switch len(list.GetValues()) {
	case 0:
		return "", &noServiceError{ref: ref}
	case 1:
		return list.GetValues()[0].GetId(), nil
	}
	return "", fmt.Errorf("several services are named %q: give the id", ref)
}

// noServiceError: no service has the package name given.
type noServiceError struct{ ref string }

func (e *noServiceError) Error() string {
	return fmt.Sprintf("no service named %q (list them with 'vcfctl service list')", e.ref)
}

func isNoService(err error) bool {
	var e *noServiceError
	return errors.As(err, &e)
}

// withService runs fn with a client and the resolved id of args[0].
func (s *session) withService(cmd *cobra.Command, ref string, fn func(cl *api.Client, id string) error) error {
	cl, err := s.client()
	if err != nil {
		return err
	}
	s.subject = ref
	id, err := resolve(cmd.Context(), cl, ref)
	if err != nil {
		return err
	}
	return fn(cl, id)
}

// serviceReads are the commands that read services and change nothing:
// list, get, history, watch, render.
type serviceReads struct {
	sess *session
	out  *printer
}

type listOpts struct {
	filter, sort, output string
	desc, allPages       bool
	page, pageSize       int
}

func (sr serviceReads) listCmd() *cobra.Command {
	var o listOpts
	c := &cobra.Command{
		Use:   "list [--filter FIQL] [--sort FIELD] [--desc] [--all-pages] [-o table|json|yaml]",
		Short: "List services",
		Args:  exactArgs(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl, err := sr.sess.client()
			if err != nil {
				return err
			}
			raw, list, err := listServices(cmd.Context(), cl, o)
			if api.StatusOf(err) == http.StatusBadRequest {
				// Every parameter of the list comes from a flag.
				return usageErr("%s", err)
			}
			if err != nil {
				return err
			}
			if o.output != formatTable {
				return sr.out.writeRaw(o.output, raw)
			}
			if len(list.GetValues()) == 0 {
				sr.out.printf("No services found.\n")
				return nil
			}
			t := newTable("NAME", "VERSION", "STATUS", "STATE", "PHASE", "ID")
			for _, s := range list.GetValues() {
				t.row(s.GetName(), s.GetVersion(), s.GetStatus(), s.GetLifecycleState(), orDash(s.GetPhase()), strings.TrimPrefix(s.GetId(), idPrefix))
			}
			t.write(sr.out.io.Out, sr.out.colour())
			if !o.allPages && list.GetPageCount() > list.GetPage() {
				sr.out.printf("(page %d of %d, %d services; --all-pages for all)\n", list.GetPage(), list.GetPageCount(), list.GetResultTotal())
			}
			return nil
		},
	}
	c.Flags().StringVar(&o.filter, "filter", "", "FIQL filter, e.g. 'name==*demo*;status==Healthy'")
	c.Flags().StringVar(&o.sort, "sort", "", "field to sort by, e.g. name")
	c.Flags().BoolVar(&o.desc, "desc", false, "sort descending")
	c.Flags().BoolVar(&o.allPages, "all-pages", false, "fetch every page (json/yaml: one result set holding all values)")
	c.Flags().IntVar(&o.page, "page", 1, "page to show")
	c.Flags().IntVar(&o.pageSize, "page-size", 25, "services per page (1-128)")
	outputFlag(c, &o.output, formatTable, formatJSON, formatYAML)
	return c
}

// listServices fetches one page, or with allPages every page merged into
// one result set (its raw JSON re-encoded from the merged message).
func listServices(ctx context.Context, cl *api.Client, o listOpts) ([]byte, *lifecyclev1.ListServicesResponse, error) {
	q := url.Values{"page": {strconv.Itoa(o.page)}, "pageSize": {strconv.Itoa(o.pageSize)}}
	if o.filter != "" {
		q.Set("filter", o.filter)
	}
	if o.sort != "" {
		key := "sortAsc"
		if o.desc {
			key = "sortDesc"
		}
		q.Set(key, o.sort)
	}
	raw, err := cl.Do(ctx, http.MethodGet, "/v2/vcf-services?"+q.Encode(), nil)
	if err != nil {
		return nil, nil, err
	}
	var first lifecyclev1.ListServicesResponse
	if err := decode(raw, &first); err != nil {
		return nil, nil, err
	}
	if !o.allPages || first.GetPageCount() <= 1 {
		return raw, &first, nil
	}
	for p := first.GetPage() + 1; p <= first.GetPageCount(); p++ {
		q.Set("page", strconv.Itoa(int(p)))
		more, err := cl.Do(ctx, http.MethodGet, "/v2/vcf-services?"+q.Encode(), nil)
		if err != nil {
			return nil, nil, err
		}
		var next lifecyclev1.ListServicesResponse
		if err := decode(more, &next); err != nil {
			return nil, nil, err
		}
		first.Values = append(first.Values, next.GetValues()...)
	}
	first.Page, first.PageCount, first.PageSize = 1, 1, int32(len(first.GetValues())) //nolint:gosec // bounded by the server's total
	merged, err := protojson.Marshal(&first)
	return merged, &first, err
}

func (sr serviceReads) getCmd() *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:               "get SERVICE [-o table|json|yaml]",
		Short:             "Show one service with its resources and errors",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: sr.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			return sr.sess.withService(cmd, args[0], func(cl *api.Client, id string) error {
				raw, err := cl.Do(cmd.Context(), http.MethodGet, servicePath(id)+"?state=true", nil)
				if err != nil {
					return err
				}
				if output != formatTable {
					return sr.out.writeRaw(output, raw)
				}
				var s lifecyclev1.VcfService
				if err := decode(raw, &s); err != nil {
					return err
				}
				sr.out.writeService(&s)
				return nil
			})
		},
	}
	outputFlag(c, &output, formatTable, formatJSON, formatYAML)
	return c
}

func (p *printer) writeService(s *lifecyclev1.VcfService) {
	kv := newTable("FIELD", "VALUE")
	kv.row("Name", s.GetName())
	kv.row("ID", s.GetId())
	kv.row("Vendor", orDash(s.GetVendor()))
	kv.row("Version", s.GetVersion())
	kv.row("Status", s.GetStatus())
	kv.row("Lifecycle state", s.GetLifecycleState())
	kv.row("Phase", orDash(s.GetPhase()))
	kv.row("Namespace", orDash(s.GetNamespace()))
	kv.row("Source", s.GetSource())
	kv.row("Available upgrade", orDash(s.GetAvailableUpgrade()))
	kv.row("Created", shortTime(s.GetCreatedAt()))
	kv.row("Updated", shortTime(s.GetUpdatedAt()))
	if op := s.GetState().GetOperation(); op != nil && op.GetType() != "" {
		kv.row("Operation", operationText(op))
	}
	if r := s.GetRollout(); r != nil && r.GetOperationId() != "" {
		kv.row("Rollout", rolloutSummaryText(r))
	}
	kv.write(p.io.Out, p.colour())
	if rs := s.GetState().GetResources(); len(rs) > 0 {
		p.printf("\nResources:\n")
		t := newTable("TYPE", "NAME", "SUPERVISOR", "STATUS", "VERSION", "MESSAGE")
		for _, r := range rs {
			t.row(r.GetType(), orDash(r.GetName()), orDash(r.GetSupervisor()), r.GetStatus(), orDash(r.GetOwnerVersion()), r.GetMessage())
		}
		t.write(p.io.Out, p.colour())
	}
	p.writeErrorDetails(s.GetState().GetErrorDetails())
}

func (p *printer) writeErrorDetails(ds []*lifecyclev1.ErrorDetail) {
	if len(ds) == 0 {
		return
	}
	p.printf("\nErrors:\n")
	t := newTable("TYPE", "SEVERITY", "MESSAGE")
	for _, d := range ds {
		t.row(d.GetType(), d.GetSeverity(), d.GetMessage())
	}
	t.write(p.io.Out, p.colour())
}

func percentText(p int32) string {
	if p < 0 {
		return ""
	}
	return fmt.Sprintf("%d%%", p)
}

func (sr serviceReads) historyCmd() *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:               "history SERVICE [-o table|json|yaml]",
		Short:             "Every operation recorded for the service, oldest first",
		Args:              exactArgs("SERVICE"),
		ValidArgsFunction: sr.sess.completeServices,
		RunE: func(cmd *cobra.Command, args []string) error {
			return sr.sess.withService(cmd, args[0], func(cl *api.Client, id string) error {
				raw, err := cl.Do(cmd.Context(), http.MethodGet, servicePath(id, "history"), nil)
				if err != nil {
					return err
				}
				if output != formatTable {
					return sr.out.writeRaw(output, raw)
				}
				var h lifecyclev1.ListServiceHistoryResponse
				if err := decode(raw, &h); err != nil {
					return err
				}
				t := newTable("STARTED", "OPERATION", "FROM", "TO", "OUTCOME", "BY", "STEPS")
				for _, op := range h.GetOperations() {
					t.row(shortTime(op.GetStartedAt()), op.GetType(), orDash(op.GetFromVersion()), orDash(op.GetToVersion()),
						op.GetOutcome(), orDash(op.GetRequestedBy()), stepsText(op.GetSteps()))
				}
				t.write(sr.out.io.Out, sr.out.colour())
				sr.out.printf("\nLast known good version: %s\n", orDash(h.GetLastKnownGoodVersion()))
				return nil
			})
		},
	}
	outputFlag(c, &output, formatTable, formatJSON, formatYAML)
	return c
}

// stepsText summarises steps: succeeded ones by name, the failed one with
// a mark, so a row shows where an operation stopped.
func stepsText(steps []*lifecyclev1.OperationStep) string {
	var parts []string
	for _, s := range steps {
		switch s.GetStatus() {
		case "Succeeded":
			parts = append(parts, s.GetName())
		case "Failed":
			parts = append(parts, s.GetName()+"(failed)")
		case "Running":
			parts = append(parts, s.GetName()+"(running)")
		}
	}
	return strings.Join(parts, ",")
}
