package peers

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/wire"
)

// Renderer is lifecycle.Renderer over the renderer's gRPC client.
type Renderer struct {
	c rendererv1.RendererServiceClient
}

var _ lifecycle.Renderer = Renderer{}

func layers(v lifecycle.ValueLayers) *rendererv1.ValueLayers {
	return &rendererv1.ValueLayers{
		Inventory: wire.InventoryProto(v.Inventory), PlatformOverlay: v.PlatformOverlay,
		VendorOverlay: v.VendorOverlay, UserOverwrite: v.UserOverwrite,
	}
}

// RenderResources renders a bundle's custom resources.
func (r Renderer) RenderResources(ctx context.Context, req lifecycle.RenderRequest) (*lifecycle.Rendering, error) {
	resp, err := r.c.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: wire.Bundle(req.Bundle), Values: layers(req.Values)})
	if err != nil {
		return nil, peerError("renderer", err)
	}
	return &lifecycle.Rendering{Documents: wire.Documents(resp.GetResources()), YAML: resp.GetYaml(), Effective: resp.GetEffectiveValuesYaml()}, nil
}

// RenderEffectiveValues renders a bundle's effective values.
func (r Renderer) RenderEffectiveValues(ctx context.Context, req lifecycle.RenderRequest) (*lifecycle.EffectiveValues, error) {
	resp, err := r.c.RenderEffectiveValues(ctx, &rendererv1.RenderEffectiveValuesRequest{
		Bundle: wire.Bundle(req.Bundle), Values: layers(req.Values), Expanded: req.Expanded, Provenance: req.Provenance,
	})
	if err != nil {
		return nil, peerError("renderer", err)
	}
	out := &lifecycle.EffectiveValues{YAML: resp.GetYaml()}
	for _, p := range resp.GetProvenance() {
		out.Provenance = append(out.Provenance, lifecycle.Provenance{Path: p.GetPath(), Layer: p.GetLayer(), Value: p.GetValue()})
	}
	return out, nil
}

// RenderAccessGrants renders the access grants to accept.
func (r Renderer) RenderAccessGrants(ctx context.Context, req lifecycle.RenderRequest) (map[string]any, error) {
	resp, err := r.c.RenderAccessGrants(ctx, &rendererv1.RenderAccessGrantsRequest{Bundle: wire.Bundle(req.Bundle), Values: layers(req.Values)})
	if err != nil {
		return nil, peerError("renderer", err)
	}
	return resp.GetAccessGrants().AsMap(), nil
}

// ApplyOverlay transforms a runtime spec with an Overlay.
func (r Renderer) ApplyOverlay(ctx context.Context, req lifecycle.OverlayRequest) (*lifecycle.OverlayResult, error) {
	p := &rendererv1.ApplyOverlayRequest{RuntimeSpecYaml: req.RuntimeSpecYAML, Overlay: req.Overlay, Mode: req.Mode,
		OverlayReady: req.OverlayReady, OverlayName: req.OverlayName}
	if req.Values != nil {
		vals, err := structpb.NewStruct(req.Values)
		if err != nil {
			return nil, fmt.Errorf("overlay %q values are not JSON: %w", req.OverlayName, err)
		}
		p.Values = vals
	}
	resp, err := r.c.ApplyOverlay(ctx, p)
	if err != nil {
		return nil, peerError("renderer", err)
	}
	return &lifecycle.OverlayResult{RuntimeSpecYAML: resp.GetRuntimeSpecYaml(), Applied: resp.GetApplied(), Status: resp.GetStatus(), Message: resp.GetMessage()}, nil
}
