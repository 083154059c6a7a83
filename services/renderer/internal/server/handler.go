// Package server is the gRPC adapter of the renderer service.
package server

import (
	"context"

	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
)

// Handler implements rendererv1.RendererServiceServer on a render.Renderer
// (the sandboxed worker pool, or the in-process engine).
type Handler struct {
	rendererv1.UnimplementedRendererServiceServer
	r render.Renderer
}

// NewHandler builds the handler.
func NewHandler(r render.Renderer) *Handler { return &Handler{r: r} }

// RenderEffectiveValues implements rendererv1.RendererServiceServer.
func (h *Handler) RenderEffectiveValues(ctx context.Context, req *rendererv1.RenderEffectiveValuesRequest) (*rendererv1.RenderEffectiveValuesResponse, error) {
	resp, err := h.r.RenderEffectiveValues(ctx, req)
	if err != nil {
		return nil, withDetails(err)
	}
	return resp, nil
}

// RenderResources implements rendererv1.RendererServiceServer.
func (h *Handler) RenderResources(ctx context.Context, req *rendererv1.RenderResourcesRequest) (*rendererv1.RenderResourcesResponse, error) {
	resp, err := h.r.RenderResources(ctx, req)
	if err != nil {
		return nil, withDetails(err)
	}
	return resp, nil
}

// RenderAccessGrants implements rendererv1.RendererServiceServer.
func (h *Handler) RenderAccessGrants(ctx context.Context, req *rendererv1.RenderAccessGrantsRequest) (*rendererv1.RenderAccessGrantsResponse, error) {
	resp, err := h.r.RenderAccessGrants(ctx, req)
	if err != nil {
		return nil, withDetails(err)
	}
	return resp, nil
}

// ApplyOverlay implements rendererv1.RendererServiceServer.
func (h *Handler) ApplyOverlay(ctx context.Context, req *rendererv1.ApplyOverlayRequest) (*rendererv1.ApplyOverlayResponse, error) {
	resp, err := h.r.ApplyOverlay(ctx, req)
	if err != nil {
		return nil, withDetails(err)
	}
	return resp, nil
}
