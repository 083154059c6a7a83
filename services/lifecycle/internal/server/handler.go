// Package server is the gRPC adapter of the lifecycle service: it
// validates and translates requests at the boundary and calls the domain.
package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Handler implements lifecyclev1.LifecycleServiceServer.
type Handler struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	m *lifecycle.Manager
}

// NewHandler adapts a manager.
func NewHandler(m *lifecycle.Manager) *Handler { return &Handler{m: m} }

func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lifecycle.ErrInvalidArgument)...)
}

// extras are the optional parts of a VcfServiceWithExtras.
type extras struct {
	metadata, pkg, state, inventory, signatures bool
}

func (h *Handler) view(ctx context.Context, svc *lifecycle.Service, x extras) (*lifecyclev1.VcfService, error) {
	out := toProto(svc)
	if next := h.m.AvailableUpgrade(ctx, svc); next != nil {
		out.AvailableUpgrade = next.Version
	}
	b, err := h.m.Bundle(svc)
	if err != nil {
		return nil, err
	}
	if b != nil {
		sig := &lifecyclev1.Signatures{IsValid: len(b.Signatures) > 0, ValidationTime: rfc3339(svc.UpdatedAt)}
		if x.signatures {
			for _, s := range b.Signatures {
				sig.Details = append(sig.Details, &lifecyclev1.SignatureDetail{Type: "cosign", Digest: s.Digest,
					Message: fmt.Sprintf("cosign signature %s carried with the bundle (%d payload(s)); no trust roots are configured, so the signer is not verified", s.Tag, len(s.Payloads))})
			}
		}
		out.Signatures = sig
		if x.metadata && b.Metadata != nil {
			if md, err := structpb.NewStruct(b.Metadata); err == nil {
				out.Metadata = md
			}
		}
		if x.pkg {
			data := b64(b.PackageYAML)
			out.PackageData = &data
		}
	}
	if x.state {
		st, err := h.m.State(ctx, svc.ID)
		if err != nil {
			return nil, err
		}
		out.State = stateProto(st)
	}
	if x.inventory {
		inv, err := h.m.Inventory(ctx)
		if err != nil {
			return nil, err
		}
		out.Inventory = inv
	}
	return out, nil
}

// CreateService implements POST /v2/vcf-services.
func (h *Handler) CreateService(ctx context.Context, req *lifecyclev1.CreateServiceRequest) (*lifecyclev1.CreateServiceResponse, error) {
	svc, err := h.m.Create(ctx, lifecycle.CreateRequest{
		Source: req.GetSource(), Name: req.GetName(), Version: req.GetVersion(),
		AutoUpgrade: req.GetAutoUpgrade(), AutoRollback: req.GetAutoRollback(), BuiltIn: req.GetBuiltIn(),
		Labels: req.GetLabels(), Locations: req.GetLocations(), RequestedBy: auth.Principal(ctx),
	})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.CreateServiceResponse{Service: toProto(svc)}, nil
}

// ListServices implements GET /v2/vcf-services.
func (h *Handler) ListServices(ctx context.Context, req *lifecyclev1.ListServicesRequest) (*lifecyclev1.ListServicesResponse, error) {
	q := lifecycle.ListQuery{Page: int(req.GetPage()), Filter: req.GetFilter(), SortAsc: req.GetSortAsc(), SortDesc: req.GetSortDesc()}
	if req.PageSize != nil {
		n := int(req.GetPageSize())
		q.PageSize = &n
	}
	res, err := h.m.List(ctx, q)
	if err != nil {
		return nil, err
	}
	x := extras{metadata: req.GetMetadata(), pkg: req.GetPackage(), state: req.GetState(), inventory: req.GetInventory(), signatures: req.GetSignatures()}
	out := &lifecyclev1.ListServicesResponse{ResultTotal: int32(res.Total), PageCount: int32(res.PageCount), Page: int32(res.Page),
		PageSize: int32(res.PageSize), Values: []*lifecyclev1.VcfService{}}
	for _, s := range res.Services {
		v, err := h.view(ctx, s, x)
		if err != nil {
			return nil, err
		}
		out.Values = append(out.Values, v)
	}
	return out, nil
}

// GetService implements GET /v2/vcf-services/{id}.
func (h *Handler) GetService(ctx context.Context, req *lifecyclev1.GetServiceRequest) (*lifecyclev1.GetServiceResponse, error) {
	svc, err := h.m.Get(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	v, err := h.view(ctx, svc, extras{metadata: req.GetMetadata(), pkg: req.GetPackage(), state: req.GetState(), inventory: req.GetInventory(), signatures: req.GetSignatures()})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.GetServiceResponse{Service: v}, nil
}

func acceptedOf(a *lifecyclev1.Accepted) *lifecycle.Accepted {
	if a == nil {
		return nil
	}
	return &lifecycle.Accepted{EULA: a.GetEula(), Signatures: a.GetSignatures(), AccessGrants: a.GetAccessGrants().AsMap()}
}

// UpdateService implements PUT /v2/vcf-services/{id}: values, lifecycle
// state, labels, locations and tenants are replaced; accepted is replaced
// when given; a source different from the installed one starts an upgrade.
func (h *Handler) UpdateService(ctx context.Context, req *lifecyclev1.UpdateServiceRequest) (*lifecyclev1.UpdateServiceResponse, error) {
	body := req.GetService()
	if body == nil {
		return nil, invalid("the request body is required")
	}
	if body.GetId() != "" && body.GetId() != req.GetId() {
		return nil, invalid("body id %q does not match the path id %q", body.GetId(), req.GetId())
	}
	if body.GetLifecycleState() == "" {
		return nil, invalid("lifecycleState is required in PUT (active, inactive or paused); use PATCH to change single fields")
	}
	if body.GetValues() == nil {
		return nil, invalid("values is required in PUT; use PATCH to change single fields")
	}
	vals := body.GetValues()
	state := body.GetLifecycleState()
	labels, locations, tenants := body.GetLabels(), body.GetLocations(), body.GetTenants()
	auto, autoRB := body.GetAutoUpgrade(), body.GetAutoRollback()
	c := lifecycle.Change{
		Values: &lifecycle.OverlayValues{PlatformOverlay: vals.GetPlatformOverlay(), VendorOverlay: vals.GetVendorOverlay(),
			UserOverwrite: vals.GetUserOverwrite(), Effective: vals.GetEffective()},
		ValueFields:    []string{"platformOverlay", "vendorOverlay", "userOverwrite"},
		LifecycleState: &state,
		Labels:         &labels, Locations: &locations, Tenants: &tenants,
		Accepted:    acceptedOf(body.GetAccepted()),
		AutoUpgrade: &auto, AutoRollback: &autoRB,
		Revision:    body.Revision,
		RequestedBy: auth.Principal(ctx),
	}
	if vals.GetEffective() != "" {
		c.ValueFields = append(c.ValueFields, "effective")
	}
	if body.GetReconfigure() != nil {
		c.Reconfigure = body.GetReconfigure().GetEvents()
	}
	if src := body.GetSource(); src != "" {
		c.Source = &src
	}
	svc, err := h.m.Apply(ctx, req.GetId(), c)
	if err != nil {
		return nil, err
	}
	v, err := h.view(ctx, svc, extras{signatures: req.GetSignatures()})
	if err != nil {
		return nil, err
	}
	grpcx.SetHTTPCode(ctx, http.StatusAccepted)
	return &lifecyclev1.UpdateServiceResponse{Service: v}, nil
}

// patchFields maps ServicePatch field names to the change they make.
var patchFields = map[string]bool{
	"values": true, "lifecycle_state": true, "phase": true, "labels": true, "locations": true, "accepted": true,
	"reconfigure": true, "source": true, "auto_upgrade": true, "auto_rollback": true, "tenants": true, "revision": true,
}

var valueFieldNames = map[string]string{
	"platform_overlay": "platformOverlay", "vendor_overlay": "vendorOverlay", "user_overwrite": "userOverwrite", "effective": "effective",
}

// maskOf returns the update mask, inferring it from the set fields when a
// gRPC client sent none (the gateway always fills it from the JSON body).
func maskOf(req *lifecyclev1.PatchServiceRequest) []string {
	if m := req.GetUpdateMask(); m != nil && len(m.GetPaths()) > 0 {
		return m.GetPaths()
	}
	var paths []string
	p := req.GetService()
	if p == nil {
		return nil
	}
	if v := p.GetValues(); v != nil {
		for name, set := range map[string]bool{"platform_overlay": v.GetPlatformOverlay() != "", "vendor_overlay": v.GetVendorOverlay() != "",
			"user_overwrite": v.GetUserOverwrite() != "", "effective": v.GetEffective() != ""} {
			if set {
				paths = append(paths, "values."+name)
			}
		}
	}
	add := func(name string, set bool) {
		if set {
			paths = append(paths, name)
		}
	}
	add("lifecycle_state", p.GetLifecycleState() != "")
	add("phase", p.GetPhase() != "")
	add("labels", p.GetLabels() != nil)
	add("locations", p.GetLocations() != nil)
	add("tenants", p.GetTenants() != nil)
	add("accepted", p.GetAccepted() != nil)
	add("reconfigure", p.GetReconfigure() != nil)
	add("source", p.GetSource() != "")
	add("auto_upgrade", p.GetAutoUpgrade())
	add("auto_rollback", p.GetAutoRollback())
	add("revision", p.Revision != nil)
	return paths
}

// PatchService implements PATCH /v2/vcf-services/{id}: only the fields in
// the body change.
func (h *Handler) PatchService(ctx context.Context, req *lifecyclev1.PatchServiceRequest) (*lifecyclev1.PatchServiceResponse, error) {
	p := req.GetService()
	if p == nil {
		p = &lifecyclev1.ServicePatch{}
	}
	c := lifecycle.Change{RequestedBy: auth.Principal(ctx)}
	for _, path := range maskOf(req) {
		top, rest, _ := strings.Cut(path, ".")
		if !patchFields[top] {
			return nil, invalid("field %q cannot be patched", path)
		}
		switch top {
		case "values":
			v := p.GetValues()
			if c.Values == nil {
				c.Values = &lifecycle.OverlayValues{PlatformOverlay: v.GetPlatformOverlay(), VendorOverlay: v.GetVendorOverlay(),
					UserOverwrite: v.GetUserOverwrite(), Effective: v.GetEffective()}
			}
			if rest == "" {
				c.ValueFields = append(c.ValueFields, "platformOverlay", "vendorOverlay", "userOverwrite")
				continue
			}
			name, ok := valueFieldNames[rest]
			if !ok {
				return nil, invalid("values.%s: unknown layer (platformOverlay, vendorOverlay, userOverwrite)", rest)
			}
			c.ValueFields = append(c.ValueFields, name)
		case "lifecycle_state":
			s := p.GetLifecycleState()
			c.LifecycleState = &s
		case "phase":
			s := p.GetPhase()
			c.Phase = &s
		case "labels":
			l := p.GetLabels()
			c.Labels = &l
		case "locations":
			l := p.GetLocations()
			c.Locations = &l
		case "tenants":
			l := p.GetTenants()
			c.Tenants = &l
		case "accepted":
			c.Accepted = acceptedOf(p.GetAccepted())
			if c.Accepted == nil {
				c.Accepted = &lifecycle.Accepted{}
			}
		case "reconfigure":
			c.Reconfigure = p.GetReconfigure().GetEvents()
			if c.Reconfigure == nil {
				c.Reconfigure = []string{}
			}
		case "source":
			s := p.GetSource()
			c.Source = &s
		case "auto_upgrade":
			b := p.GetAutoUpgrade()
			c.AutoUpgrade = &b
		case "auto_rollback":
			b := p.GetAutoRollback()
			c.AutoRollback = &b
		case "revision":
			c.Revision = p.Revision
		}
	}
	if c.LifecycleState != nil && *c.LifecycleState == lifecycle.StateDecommissioned {
		return nil, fmt.Errorf("lifecycleState cannot be set to decommissioned with PATCH: use DELETE /v2/vcf-services/{id}: %w", lifecycle.ErrInvalidTransition)
	}
	svc, err := h.m.Apply(ctx, req.GetId(), c)
	if err != nil {
		return nil, err
	}
	v, err := h.view(ctx, svc, extras{signatures: req.GetSignatures()})
	if err != nil {
		return nil, err
	}
	grpcx.SetHTTPCode(ctx, http.StatusAccepted)
	return &lifecyclev1.PatchServiceResponse{Service: v}, nil
}

// DeleteService implements DELETE /v2/vcf-services/{id}.
func (h *Handler) DeleteService(ctx context.Context, req *lifecyclev1.DeleteServiceRequest) (*lifecyclev1.DeleteServiceResponse, error) {
	svc, err := h.m.Delete(ctx, req.GetId(), req.GetForceDelete(), auth.Principal(ctx))
	if err != nil {
		return nil, err
	}
	grpcx.SetHTTPCode(ctx, http.StatusAccepted)
	return &lifecyclev1.DeleteServiceResponse{Service: toProto(svc)}, nil
}

// GetServiceState implements GET /v2/vcf-services/{id}/state.
func (h *Handler) GetServiceState(ctx context.Context, req *lifecyclev1.GetServiceStateRequest) (*lifecyclev1.GetServiceStateResponse, error) {
	st, err := h.m.State(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.GetServiceStateResponse{State: stateProto(st)}, nil
}

// GetServiceInventory implements GET /v2/vcf-services/{id}/inventory.
func (h *Handler) GetServiceInventory(ctx context.Context, req *lifecyclev1.GetServiceInventoryRequest) (*lifecyclev1.GetServiceInventoryResponse, error) {
	if _, err := h.m.Get(ctx, req.GetId()); err != nil {
		return nil, err
	}
	inv, err := h.m.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.GetServiceInventoryResponse{Inventory: inv}, nil
}

func (h *Handler) bundleOf(ctx context.Context, id string) (*lifecycle.Service, error) {
	svc, err := h.m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if svc.Digest == "" {
		return nil, fmt.Errorf("service %s has no bundle yet (status %s): %w", id, svc.Status, lifecycle.ErrFailedPrecondition)
	}
	return svc, nil
}

// GetServiceMetadata implements GET /v2/vcf-services/{id}/metadata.
func (h *Handler) GetServiceMetadata(ctx context.Context, req *lifecyclev1.GetServiceMetadataRequest) (*lifecyclev1.GetServiceMetadataResponse, error) {
	svc, err := h.bundleOf(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	b, err := h.m.Bundle(svc)
	if err != nil {
		return nil, err
	}
	md, err := structpb.NewStruct(b.Metadata)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.GetServiceMetadataResponse{Metadata: md}, nil
}

// GetServicePackage implements GET /v2/vcf-services/{id}/package (YAML).
func (h *Handler) GetServicePackage(ctx context.Context, req *lifecyclev1.GetServicePackageRequest) (*lifecyclev1.GetServicePackageResponse, error) {
	svc, err := h.bundleOf(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	b, err := h.m.Bundle(svc)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.GetServicePackageResponse{Package: yamlDoc(b.PackageYAML)}, nil
}

func yamlDoc(b []byte) *commonv1.YamlDocument {
	return &commonv1.YamlDocument{ContentType: "application/yaml", Data: b}
}

// renderInput: empty overlay strings mean "use the stored layer"; a
// missing inventory means the platform inventory.
func renderInput(v *lifecyclev1.Values) lifecycle.RenderInput {
	var in lifecycle.RenderInput
	if v == nil {
		return in
	}
	if v.GetInventory() != nil {
		in.Inventory = v.GetInventory()
	}
	set := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	in.PlatformOverlay, in.VendorOverlay, in.UserOverwrite = set(v.GetPlatformOverlay()), set(v.GetVendorOverlay()), set(v.GetUserOverwrite())
	return in
}

// RenderEffectiveValues implements POST /{id}/render-effective-values.
func (h *Handler) RenderEffectiveValues(ctx context.Context, req *lifecyclev1.RenderEffectiveValuesRequest) (*lifecyclev1.RenderEffectiveValuesResponse, error) {
	out, err := h.m.RenderEffectiveValues(ctx, req.GetId(), renderInput(req.GetValues()), req.GetExpanded())
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.RenderEffectiveValuesResponse{EffectiveValues: yamlDoc(out)}, nil
}

// RenderValueProvenance implements POST /{id}/render-value-provenance.
func (h *Handler) RenderValueProvenance(ctx context.Context, req *lifecyclev1.RenderValueProvenanceRequest) (*lifecyclev1.RenderValueProvenanceResponse, error) {
	entries, err := h.m.RenderValueProvenance(ctx, req.GetId(), renderInput(req.GetValues()), req.GetExpanded())
	if err != nil {
		return nil, err
	}
	out := &lifecyclev1.RenderValueProvenanceResponse{Entries: []*lifecyclev1.ValueProvenance{}}
	for _, e := range entries {
		out.Entries = append(out.Entries, &lifecyclev1.ValueProvenance{Path: e.Path, Layer: e.Layer, Value: e.Value})
	}
	return out, nil
}

// RenderResources implements POST /{id}/render-resources.
func (h *Handler) RenderResources(ctx context.Context, req *lifecyclev1.RenderResourcesRequest) (*lifecyclev1.RenderResourcesResponse, error) {
	out, err := h.m.RenderResources(ctx, req.GetId(), renderInput(req.GetValues()))
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.RenderResourcesResponse{Resources: yamlDoc(out)}, nil
}

// RenderAccessGrants implements POST /{id}/render-access-grants.
func (h *Handler) RenderAccessGrants(ctx context.Context, req *lifecyclev1.RenderAccessGrantsRequest) (*lifecyclev1.RenderAccessGrantsResponse, error) {
	grants, err := h.m.RenderAccessGrants(ctx, req.GetId(), renderInput(req.GetValues()))
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.RenderAccessGrantsResponse{AccessGrants: structOf(grants)}, nil
}

// RollbackService implements POST /{id}/rollback.
func (h *Handler) RollbackService(ctx context.Context, req *lifecyclev1.RollbackServiceRequest) (*lifecyclev1.RollbackServiceResponse, error) {
	svc, err := h.m.Rollback(ctx, req.GetId(), req.GetTargetVersion(), auth.Principal(ctx))
	if err != nil {
		return nil, err
	}
	grpcx.SetHTTPCode(ctx, http.StatusAccepted)
	return &lifecyclev1.RollbackServiceResponse{Service: toProto(svc)}, nil
}

// PreviewUpgrade implements POST /{id}/upgrade-plan.
func (h *Handler) PreviewUpgrade(ctx context.Context, req *lifecyclev1.PreviewUpgradeRequest) (*lifecyclev1.PreviewUpgradeResponse, error) {
	plan, err := h.m.PreviewUpgrade(ctx, req.GetId(), req.GetSource(), req.GetTargetVersion())
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.PreviewUpgradeResponse{Plan: planProto(plan)}, nil
}

// ListServiceHistory implements GET /{id}/history.
func (h *Handler) ListServiceHistory(ctx context.Context, req *lifecyclev1.ListServiceHistoryRequest) (*lifecyclev1.ListServiceHistoryResponse, error) {
	ops, lkg, err := h.m.History(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	out := &lifecyclev1.ListServiceHistoryResponse{LastKnownGoodVersion: lkg, Operations: []*lifecyclev1.Operation{}}
	for _, op := range ops {
		out.Operations = append(out.Operations, operationProto(op))
	}
	return out, nil
}

// WatchService implements the server-streaming watch.
func (h *Handler) WatchService(req *lifecyclev1.WatchServiceRequest, stream lifecyclev1.LifecycleService_WatchServiceServer) error {
	return h.m.Watch(stream.Context(), req.GetId(), func(e lifecycle.Event) error {
		return stream.Send(&lifecyclev1.WatchServiceResponse{Id: e.ID, Status: e.Status, Phase: e.Phase, LifecycleState: e.LifecycleState,
			Version: e.Version, Revision: e.Revision, Time: e.Time.Format(time.RFC3339Nano), Deleted: e.Deleted, Operation: progressProto(e.Progress)})
	})
}

// RegisterServiceVersion implements POST /v2/vcf-service-versions.
func (h *Handler) RegisterServiceVersion(ctx context.Context, req *lifecyclev1.RegisterServiceVersionRequest) (*lifecyclev1.RegisterServiceVersionResponse, error) {
	e, err := h.m.RegisterVersion(ctx, req.GetSource(), req.GetBuiltIn())
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.RegisterServiceVersionResponse{Version: catalogProto(e)}, nil
}

// ListServiceVersions implements GET /v2/vcf-service-versions.
func (h *Handler) ListServiceVersions(ctx context.Context, req *lifecyclev1.ListServiceVersionsRequest) (*lifecyclev1.ListServiceVersionsResponse, error) {
	es, err := h.m.Versions(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	out := &lifecyclev1.ListServiceVersionsResponse{Versions: []*lifecyclev1.ServiceVersion{}}
	for _, e := range es {
		out.Versions = append(out.Versions, catalogProto(e))
	}
	return out, nil
}

// GetPlatformInventory implements GET /v2/inventory.
func (h *Handler) GetPlatformInventory(ctx context.Context, _ *lifecyclev1.GetPlatformInventoryRequest) (*lifecyclev1.GetPlatformInventoryResponse, error) {
	inv, err := h.m.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.GetPlatformInventoryResponse{Inventory: inv}, nil
}

// PutPlatformInventory implements PUT /v2/inventory.
func (h *Handler) PutPlatformInventory(ctx context.Context, req *lifecyclev1.PutPlatformInventoryRequest) (*lifecyclev1.PutPlatformInventoryResponse, error) {
	inv := req.GetInventory()
	if inv == nil {
		inv = &commonv1.Inventory{}
	}
	checks, err := h.m.PutInventory(ctx, inv)
	if err != nil {
		return nil, err
	}
	out := &lifecyclev1.PutPlatformInventoryResponse{Inventory: inv, SupervisorUpgrades: []*lifecyclev1.CheckSupervisorUpgradeResponse{}}
	for _, c := range checks {
		out.SupervisorUpgrades = append(out.SupervisorUpgrades, supervisorCheckProto(c))
	}
	return out, nil
}

// CheckSupervisorUpgrade implements POST /v2/supervisors/{supervisor}/upgrade-check.
func (h *Handler) CheckSupervisorUpgrade(ctx context.Context, req *lifecyclev1.CheckSupervisorUpgradeRequest) (*lifecyclev1.CheckSupervisorUpgradeResponse, error) {
	c, err := h.m.CheckSupervisorUpgrade(ctx, req.GetSupervisor(), req.GetTargetVersion(), req.GetTargetKubernetesVersion())
	if err != nil {
		return nil, err
	}
	return supervisorCheckProto(c), nil
}
