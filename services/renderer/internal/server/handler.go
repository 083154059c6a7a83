// Package server is the gRPC adapter of the renderer service.
package server

import (
	"context"
	"crypto/sha256"

	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/protobuf/proto"

	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
	"github.com/vcfsm/vcfsm/services/renderer/internal/sandbox"
)

// Handler implements rendererv1.RendererServiceServer on a render.Renderer
// (the sandboxed worker pool, or the in-process engine).
type Handler struct {
	rendererv1.UnimplementedRendererServiceServer
	r render.Renderer
	// grants keeps recent access-grant answers by request: a client reads
	// a service's grants, then activates accepting them, and the
	// activation renders the same grants again to compare (for thousands
	// of resources, a render of half a second). A render is a function of
	// its request (the bundle, by content digest, and the value layers).
	grants *lru.Cache[[sha256.Size]byte, *rendererv1.RenderAccessGrantsResponse]
}

// grantsCacheSize bounds the access-grant answers kept (each is small).
const grantsCacheSize = 64

// forCaller names who a render is for (the REST caller a lifecycle
// request serves, or the calling service), so the worker pool shares its
// workers fairly among callers.
func forCaller(ctx context.Context) context.Context {
	return sandbox.WithPrincipal(ctx, auth.OnBehalfOf(ctx))
}

// NewHandler builds the handler.
func NewHandler(r render.Renderer) *Handler {
	grants, _ := lru.New[[sha256.Size]byte, *rendererv1.RenderAccessGrantsResponse](grantsCacheSize) // errors only for a size < 1
	return &Handler{r: r, grants: grants}
}

// RenderEffectiveValues implements rendererv1.RendererServiceServer.
func (h *Handler) RenderEffectiveValues(ctx context.Context, req *rendererv1.RenderEffectiveValuesRequest) (*rendererv1.RenderEffectiveValuesResponse, error) {
	resp, err := h.r.RenderEffectiveValues(forCaller(ctx), req)
	if err != nil {
		return nil, withDetails(err)
	}
	return resp, nil
}

// RenderResources implements rendererv1.RendererServiceServer.
func (h *Handler) RenderResources(ctx context.Context, req *rendererv1.RenderResourcesRequest) (*rendererv1.RenderResourcesResponse, error) {
	resp, err := h.r.RenderResources(forCaller(ctx), req)
	if err != nil {
		return nil, withDetails(err)
	}
	return resp, nil
}

// RenderAccessGrants implements rendererv1.RendererServiceServer.
func (h *Handler) RenderAccessGrants(ctx context.Context, req *rendererv1.RenderAccessGrantsRequest) (*rendererv1.RenderAccessGrantsResponse, error) {
	raw, keyErr := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	key := sha256.Sum256(raw)
	if keyErr == nil {
		if resp, ok := h.grants.Get(key); ok {
			return proto.CloneOf(resp), nil
		}
	}
	resp, err := h.r.RenderAccessGrants(forCaller(ctx), req)
	if err != nil {
		return nil, withDetails(err)
	}
	if keyErr == nil {
		h.grants.Add(key, proto.CloneOf(resp))
	}
	return resp, nil
}

// ApplyOverlay implements rendererv1.RendererServiceServer.
func (h *Handler) ApplyOverlay(ctx context.Context, req *rendererv1.ApplyOverlayRequest) (*rendererv1.ApplyOverlayResponse, error) {
	resp, err := h.r.ApplyOverlay(forCaller(ctx), req)
	if err != nil {
		return nil, withDetails(err)
	}
	return resp, nil
}
