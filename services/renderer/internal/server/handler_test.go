package server

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
)

// countingRenderer answers access grants naming the bundle's digest and
// counts the renders.
type countingRenderer struct {
	render.Renderer
	grants int
}

func (c *countingRenderer) RenderAccessGrants(_ context.Context, req *rendererv1.RenderAccessGrantsRequest) (*rendererv1.RenderAccessGrantsResponse, error) {
	c.grants++
	s, err := structpb.NewStruct(map[string]any{"digest": req.GetBundle().GetDigest()})
	if err != nil {
		return nil, err
	}
	return &rendererv1.RenderAccessGrantsResponse{AccessGrants: s}, nil
}

// The same request's access grants are rendered once; another request
// (another bundle, other values) renders again.
func TestAccessGrantsAreRenderedOncePerRequest(t *testing.T) {
	r := &countingRenderer{}
	h := NewHandler(r)
	ctx := context.Background()
	req := func(digest, overlay string) *rendererv1.RenderAccessGrantsRequest {
		return &rendererv1.RenderAccessGrantsRequest{Bundle: &commonv1.Bundle{Digest: digest},
			Values: &rendererv1.ValueLayers{UserOverwrite: overlay}}
	}
	first, err := h.RenderAccessGrants(ctx, req("sha256:a", ""))
	require.NoError(t, err)
	first.AccessGrants = nil // a caller editing its answer leaves the cache alone
	again, err := h.RenderAccessGrants(ctx, req("sha256:a", ""))
	require.NoError(t, err)
	require.Equal(t, "sha256:a", again.GetAccessGrants().AsMap()["digest"])
	require.Equal(t, 1, r.grants, "the second answer came from the cache")
	_, err = h.RenderAccessGrants(ctx, req("sha256:b", ""))
	require.NoError(t, err)
	_, err = h.RenderAccessGrants(ctx, req("sha256:a", "x: 1"))
	require.NoError(t, err)
	require.Equal(t, 3, r.grants, "another bundle or other values render again")
}
