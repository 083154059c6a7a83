package manager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// RenderEffectiveValues previews the effective values (YAML).
func (m *Manager) RenderEffectiveValues(ctx context.Context, id string, in lifecycle.RenderInput, expanded bool) ([]byte, error) {
	out, err := m.effectiveValues(ctx, id, in, expanded, false)
	if err != nil {
		return nil, err
	}
	return out.YAML, nil
}

// RenderValueProvenance previews which layer sets every effective value.
func (m *Manager) RenderValueProvenance(ctx context.Context, id string, in lifecycle.RenderInput, expanded bool) ([]lifecycle.Provenance, error) {
	out, err := m.effectiveValues(ctx, id, in, expanded, true)
	if err != nil {
		return nil, err
	}
	if out.Provenance == nil {
		return []lifecycle.Provenance{}, nil
	}
	return out.Provenance, nil
}

// effectiveValues renders a service's value layers through the renderer.
func (m *Manager) effectiveValues(ctx context.Context, id string, in lifecycle.RenderInput, expanded, provenance bool) (*lifecycle.EffectiveValues, error) {
	svc, b, err := m.serviceAndBundle(ctx, id)
	if err != nil {
		return nil, err
	}
	layers, err := steps.Layers(ctx, m.Repo, svc, in)
	if err != nil {
		return nil, err
	}
	return m.Peers.Renderer.RenderEffectiveValues(ctx, lifecycle.RenderRequest{Bundle: b, Values: layers, Expanded: expanded, Provenance: provenance})
}

// RenderResources previews the custom resources (YAML).
func (m *Manager) RenderResources(ctx context.Context, id string, in lifecycle.RenderInput) ([]byte, error) {
	svc, b, err := m.serviceAndBundle(ctx, id)
	if err != nil {
		return nil, err
	}
	r, err := steps.Render(ctx, m.RenderPorts(), svc, b, in)
	if err != nil {
		return nil, err
	}
	return r.YAML, nil
}

// RenderAccessGrants previews the access grants to accept.
func (m *Manager) RenderAccessGrants(ctx context.Context, id string, in lifecycle.RenderInput) (map[string]any, error) {
	svc, b, err := m.serviceAndBundle(ctx, id)
	if err != nil {
		return nil, err
	}
	return steps.AccessGrants(ctx, m.RenderPorts(), svc, b, in)
}

func (m *core) serviceAndBundle(ctx context.Context, id string) (*lifecycle.Service, *bundle.Bundle, error) {
	svc, err := m.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	b, err := m.requestBundle(svc)
	if err != nil {
		return nil, nil, err
	}
	return svc, b, nil
}

// requestBundle loads a service's bundle for a request (a preview). A
// bundle this replica holds nowhere, not in the shared store and not at its
// source right now, is Unavailable: the request may succeed later or on
// another replica; it is neither the caller's mistake nor an internal error.
func (m *core) requestBundle(svc *lifecycle.Service) (*bundle.Bundle, error) {
	b, err := steps.LoadBundle(m.Bundles, svc)
	if errors.Is(err, bundle.ErrNotFound) || errors.Is(err, bundle.ErrFetch) {
		return nil, fmt.Errorf("%w (%w: try again later or on another replica)", err, lifecycle.ErrUnavailable)
	}
	return b, err
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
