package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// RenderInput overrides the stored layers for a preview; nil fields take
// the service's stored values and the platform inventory.
type RenderInput struct {
	Inventory       *commonv1.Inventory
	PlatformOverlay *string
	VendorOverlay   *string
	UserOverwrite   *string
}

// peerError turns a peer service's gRPC error into a domain error, keeping
// its message: a bad bundle or bad values is the caller's problem (400), a
// peer that is down is ErrUnavailable.
func peerError(peer string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", peer, err)
	}
	switch st.Code() {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange, codes.ResourceExhausted, codes.DeadlineExceeded:
		return fmt.Errorf("%s: %s: %w", peer, st.Message(), ErrInvalidArgument)
	case codes.Unavailable:
		return fmt.Errorf("%s unavailable: %s: %w", peer, st.Message(), ErrUnavailable)
	case codes.NotFound:
		return fmt.Errorf("%s: %s: %w", peer, st.Message(), ErrNotFound)
	}
	return fmt.Errorf("%s: %s (%s)", peer, st.Message(), st.Code())
}

func bundleProto(b *bundle.Bundle) *commonv1.Bundle {
	pb := &commonv1.Bundle{Digest: b.Digest}
	for _, f := range b.Files {
		pb.Files = append(pb.Files, &commonv1.BundleFile{Path: f.Path, Content: f.Content})
	}
	return pb
}

func (m *Manager) layers(ctx context.Context, svc *Service, in RenderInput) (*rendererv1.ValueLayers, error) {
	inv := in.Inventory
	if inv == nil {
		var err error
		if inv, err = m.repo.Inventory(ctx); err != nil {
			return nil, err
		}
	}
	pick := func(override *string, stored string) string {
		if override != nil {
			return *override
		}
		return stored
	}
	return &rendererv1.ValueLayers{
		Inventory:       inv,
		PlatformOverlay: pick(in.PlatformOverlay, svc.Values.PlatformOverlay),
		VendorOverlay:   pick(in.VendorOverlay, svc.Values.VendorOverlay),
		UserOverwrite:   pick(in.UserOverwrite, svc.Values.UserOverwrite),
	}, nil
}

// loadBundle returns a registered service's bundle.
func (m *Manager) loadBundle(svc *Service) (*bundle.Bundle, error) {
	if svc.Digest == "" {
		return nil, fmt.Errorf("service %s has no bundle yet (status %s): wait until it is Unresolved or Ready: %w", svc.ID, svc.Status, ErrFailedPrecondition)
	}
	b, err := m.bundles.Load(svc.Digest)
	if err != nil {
		return nil, fmt.Errorf("bundle %s of service %s: %w", svc.Digest, svc.ID, err)
	}
	return b, nil
}

// rendered is one render of a service's bundle.
type rendered struct {
	Resources []*commonv1.Resource
	YAML      []byte
	Effective []byte
}

func (m *Manager) render(ctx context.Context, svc *Service, b *bundle.Bundle, in RenderInput) (*rendered, error) {
	layers, err := m.layers(ctx, svc, in)
	if err != nil {
		return nil, err
	}
	resp, err := m.peers.Renderer.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: bundleProto(b), Values: layers})
	if err != nil {
		return nil, peerError("renderer", err)
	}
	return &rendered{Resources: resp.GetResources(), YAML: resp.GetYaml(), Effective: resp.GetEffectiveValuesYaml()}, nil
}

func (m *Manager) accessGrants(ctx context.Context, svc *Service, b *bundle.Bundle, in RenderInput) (map[string]any, error) {
	layers, err := m.layers(ctx, svc, in)
	if err != nil {
		return nil, err
	}
	resp, err := m.peers.Renderer.RenderAccessGrants(ctx, &rendererv1.RenderAccessGrantsRequest{Bundle: bundleProto(b), Values: layers})
	if err != nil {
		return nil, peerError("renderer", err)
	}
	return resp.GetAccessGrants().AsMap(), nil
}

// RenderEffectiveValues previews the effective values (YAML).
func (m *Manager) RenderEffectiveValues(ctx context.Context, id string, in RenderInput, expanded bool) ([]byte, error) {
	svc, b, err := m.serviceAndBundle(ctx, id)
	if err != nil {
		return nil, err
	}
	layers, err := m.layers(ctx, svc, in)
	if err != nil {
		return nil, err
	}
	resp, err := m.peers.Renderer.RenderEffectiveValues(ctx, &rendererv1.RenderEffectiveValuesRequest{Bundle: bundleProto(b), Values: layers, Expanded: expanded})
	if err != nil {
		return nil, peerError("renderer", err)
	}
	return resp.GetYaml(), nil
}

// Provenance is the layer that set one leaf of the effective values.
type Provenance struct {
	Path, Layer, Value string
}

// RenderValueProvenance previews which layer sets every effective value.
func (m *Manager) RenderValueProvenance(ctx context.Context, id string, in RenderInput, expanded bool) ([]Provenance, error) {
	svc, b, err := m.serviceAndBundle(ctx, id)
	if err != nil {
		return nil, err
	}
	layers, err := m.layers(ctx, svc, in)
	if err != nil {
		return nil, err
	}
	resp, err := m.peers.Renderer.RenderEffectiveValues(ctx, &rendererv1.RenderEffectiveValuesRequest{Bundle: bundleProto(b), Values: layers, Expanded: expanded, Provenance: true})
	if err != nil {
		return nil, peerError("renderer", err)
	}
	out := make([]Provenance, 0, len(resp.GetProvenance()))
	for _, p := range resp.GetProvenance() {
		out = append(out, Provenance{Path: p.GetPath(), Layer: p.GetLayer(), Value: p.GetValue()})
	}
	return out, nil
}

// RenderResources previews the custom resources (YAML).
func (m *Manager) RenderResources(ctx context.Context, id string, in RenderInput) ([]byte, error) {
	svc, b, err := m.serviceAndBundle(ctx, id)
	if err != nil {
		return nil, err
	}
	r, err := m.render(ctx, svc, b, in)
	if err != nil {
		return nil, err
	}
	return r.YAML, nil
}

// RenderAccessGrants previews the access grants to accept.
func (m *Manager) RenderAccessGrants(ctx context.Context, id string, in RenderInput) (map[string]any, error) {
	svc, b, err := m.serviceAndBundle(ctx, id)
	if err != nil {
		return nil, err
	}
	return m.accessGrants(ctx, svc, b, in)
}

func (m *Manager) serviceAndBundle(ctx context.Context, id string) (*Service, *bundle.Bundle, error) {
	svc, err := m.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	b, err := m.loadBundle(svc)
	if err != nil {
		return nil, nil, err
	}
	return svc, b, nil
}

// sameGrants compares access grants as JSON documents.
func sameGrants(a, b map[string]any) bool {
	ja, err1 := canonicalJSON(a)
	jb, err2 := canonicalJSON(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func canonicalJSON(m map[string]any) ([]byte, error) {
	if m == nil {
		m = map[string]any{}
	}
	// Round-trip through structpb so numbers and nesting normalise the
	// same way on both sides; encoding/json sorts map keys.
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s.AsMap())
}
