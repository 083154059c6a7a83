// Package server is the gRPC adapter of the lifecycle service: it
// validates and translates requests at the boundary and calls the domain.
package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/manager"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/ops"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/reads"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/signature"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/wire"
)

// Handler implements lifecyclev1.LifecycleServiceServer.
type Handler struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	m *manager.Manager
	// sigs verifies bundle signatures; nil when no keys are trusted.
	sigs *signature.Verifier
	// views keeps GetService's answers (viewCache).
	views viewCache
	// revHeader is the revision header the answers carry (Revisions).
	revHeader revisionHeader
	// secrets keeps each service's secrets per revision (redact.go).
	secrets secretsCache
}

// NewHandler adapts a manager.
func NewHandler(m *manager.Manager) *Handler { return &Handler{m: m} }

func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lifecycle.ErrInvalidArgument)...)
}

// CreateService implements POST /v2/vcf-services.
func (h *Handler) CreateService(ctx context.Context, req *lifecyclev1.CreateServiceRequest) (*lifecyclev1.CreateServiceResponse, error) {
	svc, err := h.m.Create(ctx, ops.CreateRequest{
		Source: req.GetSource(), Name: req.GetName(), Version: req.GetVersion(),
		AutoUpgrade: req.GetAutoUpgrade(), AutoRollback: req.GetAutoRollback(), BuiltIn: req.GetBuiltIn(),
		Labels: req.GetLabels(), Locations: req.GetLocations(), RequestedBy: auth.Principal(ctx),
		AutoUpgradePrereleases: req.GetAutoUpgradePrereleases(),
	})
	if err != nil {
		return nil, err
	}
	out, err := toProto(svc)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.CreateServiceResponse{Service: out}, nil
}

// ListServices implements GET /v2/vcf-services.
func (h *Handler) ListServices(ctx context.Context, req *lifecyclev1.ListServicesRequest) (*lifecyclev1.ListServicesResponse, error) {
	q := reads.ListQuery{Page: int(req.GetPage()), Filter: req.GetFilter(), SortAsc: req.GetSortAsc(), SortDesc: req.GetSortDesc()}
	if req.PageSize != nil {
		n := int(req.GetPageSize())
		q.PageSize = &n
	}
	res, err := h.m.List(ctx, q)
	if err != nil {
		return nil, err
	}
	// One read model per page: the inventory and each name's catalog are
	// read once for the whole page.
	rm := newReadModel(h.m, h.sigs, extras{metadata: req.GetMetadata(), pkg: req.GetPackage(), state: req.GetState(), inventory: req.GetInventory(), signatures: req.GetSignatures()})
	out := &lifecyclev1.ListServicesResponse{ResultTotal: int32(res.Total), PageCount: int32(res.PageCount), Page: int32(res.Page),
		PageSize: int32(res.PageSize), Values: []*lifecyclev1.VcfService{}}
	for _, s := range res.Services {
		v, err := rm.view(ctx, s)
		if err != nil {
			return nil, err
		}
		out.Values = append(out.Values, v)
	}
	return out, nil
}

// GetService implements GET /v2/vcf-services/{id}.
func (h *Handler) GetService(ctx context.Context, req *lifecyclev1.GetServiceRequest) (*lifecyclev1.GetServiceResponse, error) {
	// The read model only reads the service: no copy of the record.
	svc, err := h.m.View(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	x := extras{metadata: req.GetMetadata(), pkg: req.GetPackage(), state: req.GetState(), inventory: req.GetInventory(), signatures: req.GetSignatures()}
	var hide *secrets
	if !canSeeSecrets(ctx) {
		hide = h.secretsOf(ctx, svc.ID, lifecycle.RenderInput{})
	}
	v, err := h.views.view(ctx, newReadModel(h.m, h.sigs, x), svc, hide)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.GetServiceResponse{Service: v}, nil
}

// UpdateService implements PUT /v2/vcf-services/{id}: values, lifecycle
// state, labels, locations and tenants are replaced; accepted is replaced
// when given; a source different from the installed one starts an upgrade;
// lifecycleState decommissioned deletes the service as DELETE does.
func (h *Handler) UpdateService(ctx context.Context, req *lifecyclev1.UpdateServiceRequest) (*lifecyclev1.UpdateServiceResponse, error) {
	c, err := changeFromPut(req)
	if err != nil {
		return nil, err
	}
	c.RequestedBy = auth.Principal(ctx)
	var svc *lifecycle.Service
	if *c.LifecycleState == lifecycle.StateDecommissioned {
		// api.md lists decommissioned among PUT's states: it is a DELETE.
		svc, err = h.m.Delete(ctx, req.GetId(), false, c.RequestedBy)
	} else {
		svc, err = h.m.Apply(ctx, req.GetId(), c)
	}
	if err != nil {
		return nil, err
	}
	v, err := newReadModel(h.m, h.sigs, extras{signatures: req.GetSignatures()}).view(ctx, svc)
	if err != nil {
		return nil, err
	}
	grpcx.SetHTTPCode(ctx, http.StatusAccepted)
	return &lifecyclev1.UpdateServiceResponse{Service: v}, nil
}

// PatchService implements PATCH /v2/vcf-services/{id}: only the fields in
// the body change.
func (h *Handler) PatchService(ctx context.Context, req *lifecyclev1.PatchServiceRequest) (*lifecyclev1.PatchServiceResponse, error) {
	c, err := changeFromPatch(req)
	if err != nil {
		return nil, err
	}
	c.RequestedBy = auth.Principal(ctx)
	svc, err := h.m.Apply(ctx, req.GetId(), c)
	if err != nil {
		return nil, err
	}
	v, err := newReadModel(h.m, h.sigs, extras{signatures: req.GetSignatures()}).view(ctx, svc)
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
	out, err := toProto(svc)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.DeleteServiceResponse{Service: out}, nil
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
	return &lifecyclev1.GetServiceInventoryResponse{Inventory: wire.InventoryProto(inv)}, nil
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
	md, err := metadataStruct(svc, b.Metadata)
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
		in.Inventory = wire.Inventory(v.GetInventory())
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
	out, err := structOf(grants)
	if err != nil {
		return nil, fmt.Errorf("show the access grants of service %s: %w", req.GetId(), err)
	}
	return &lifecyclev1.RenderAccessGrantsResponse{AccessGrants: out}, nil
}

// RollbackService implements POST /{id}/rollback.
func (h *Handler) RollbackService(ctx context.Context, req *lifecyclev1.RollbackServiceRequest) (*lifecyclev1.RollbackServiceResponse, error) {
	svc, err := h.m.Rollback(ctx, req.GetId(), req.GetTargetVersion(), auth.Principal(ctx))
	if err != nil {
		return nil, err
	}
	grpcx.SetHTTPCode(ctx, http.StatusAccepted)
	out, err := toProto(svc)
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.RollbackServiceResponse{Service: out}, nil
}

// PreviewUpgrade implements POST /{id}/upgrade-plan.
func (h *Handler) PreviewUpgrade(ctx context.Context, req *lifecyclev1.PreviewUpgradeRequest) (*lifecyclev1.PreviewUpgradeResponse, error) {
	rollout, err := rolloutRequestFromProto(req.GetRollout())
	if err != nil {
		return nil, err
	}
	// Previewing changes nothing (viewers may); keeping the plan for an
	// upgrade to execute is a write.
	if id, ok := auth.CallerIdentity(ctx); ok && req.GetStore() {
		if err := auth.Require(id, auth.PermWrite); err != nil {
			return nil, fmt.Errorf("store: %w: %w", err, lifecycle.ErrPermissionDenied)
		}
	}
	plan, err := h.m.PreviewUpgrade(ctx, reads.PreviewRequest{ID: req.GetId(), Source: req.GetSource(), TargetVersion: req.GetTargetVersion(), Rollout: rollout},
		req.GetStore(), acceptedOf(req.GetAccepted()), auth.Principal(ctx))
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
	if err := checkParams(req); err != nil {
		return err
	}
	ctx := stream.Context()
	hide := !canSeeSecrets(ctx)
	return h.m.Watch(ctx, req.GetId(), req.GetUntil(), func(e reads.Event) error {
		out := &lifecyclev1.WatchServiceResponse{Id: e.ID, Status: e.Status, Phase: e.Phase, LifecycleState: e.LifecycleState,
			Version: e.Version, Revision: e.Revision, Time: e.Time.Format(time.RFC3339Nano), Deleted: e.Deleted, Operation: progressProto(e.Progress)}
		if hide && out.GetOperation() != nil {
			// A step's message may quote what failed (a value).
			h.secretsOf(ctx, e.ID, lifecycle.RenderInput{}).message(out.ProtoReflect())
		}
		return stream.Send(out)
	})
}

// RegisterServiceVersion implements POST /v2/vcf-service-versions.
func (h *Handler) RegisterServiceVersion(ctx context.Context, req *lifecyclev1.RegisterServiceVersionRequest) (*lifecyclev1.RegisterServiceVersionResponse, error) {
	e, err := h.m.RegisterVersion(ctx, req.GetSource(), req.GetBuiltIn(), auth.Principal(ctx))
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
	return &lifecyclev1.GetPlatformInventoryResponse{Inventory: wire.InventoryProto(inv)}, nil
}

// PutPlatformInventory implements PUT /v2/inventory.
func (h *Handler) PutPlatformInventory(ctx context.Context, req *lifecyclev1.PutPlatformInventoryRequest) (*lifecyclev1.PutPlatformInventoryResponse, error) {
	inv := req.GetInventory()
	if inv == nil {
		inv = &commonv1.Inventory{}
	}
	checks, err := h.m.PutInventory(ctx, wire.Inventory(inv))
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
