package reads

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// Previews render and check without changing anything: the render
// endpoints, the upgrade plan and the Supervisor upgrade check. They call
// the peers and the targets (dry runs) but never write.
type Previews struct {
	reader  *Reader
	ports   steps.Ports
	bundles lifecycle.Bundles
}

// NewPreviews returns previews over the reader's store and ports (whose
// Store is never used: previews do not write).
func NewPreviews(reader *Reader, ports steps.Ports, bundles lifecycle.Bundles) *Previews {
	ports.Store = nil
	return &Previews{reader: reader, ports: ports, bundles: bundles}
}

// RenderEffectiveValues previews the effective values (YAML).
func (p *Previews) RenderEffectiveValues(ctx context.Context, id string, in lifecycle.RenderInput, expanded bool) ([]byte, error) {
	out, err := p.effectiveValues(ctx, id, in, expanded, false)
	if err != nil {
		return nil, err
	}
	return out.YAML, nil
}

// RenderValueProvenance previews which layer sets every effective value.
func (p *Previews) RenderValueProvenance(ctx context.Context, id string, in lifecycle.RenderInput, expanded bool) ([]lifecycle.Provenance, error) {
	out, err := p.effectiveValues(ctx, id, in, expanded, true)
	if err != nil {
		return nil, err
	}
	if out.Provenance == nil {
		return []lifecycle.Provenance{}, nil
	}
	return out.Provenance, nil
}

// effectiveValues renders a service's value layers through the renderer.
func (p *Previews) effectiveValues(ctx context.Context, id string, in lifecycle.RenderInput, expanded, provenance bool) (*lifecycle.EffectiveValues, error) {
	svc, b, err := p.serviceAndBundle(ctx, id)
	if err != nil {
		return nil, err
	}
	layers, err := steps.Layers(ctx, p.ports.Repo, svc, in)
	if err != nil {
		return nil, err
	}
	return p.ports.Peers.Renderer.RenderEffectiveValues(ctx, lifecycle.RenderRequest{Bundle: b, Values: layers, Expanded: expanded, Provenance: provenance})
}

// RenderResources previews the custom resources (YAML).
func (p *Previews) RenderResources(ctx context.Context, id string, in lifecycle.RenderInput) ([]byte, error) {
	svc, b, err := p.serviceAndBundle(ctx, id)
	if err != nil {
		return nil, err
	}
	r, err := steps.Render(ctx, p.ports.Render(), svc, b, in)
	if err != nil {
		return nil, err
	}
	return r.YAML, nil
}

// RenderAccessGrants previews the access grants to accept.
func (p *Previews) RenderAccessGrants(ctx context.Context, id string, in lifecycle.RenderInput) (map[string]any, error) {
	svc, b, err := p.serviceAndBundle(ctx, id)
	if err != nil {
		return nil, err
	}
	return steps.AccessGrants(ctx, p.ports.Render(), svc, b, in)
}

func (p *Previews) serviceAndBundle(ctx context.Context, id string) (*lifecycle.Service, *bundle.Bundle, error) {
	svc, err := p.reader.Get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	b, err := p.reader.requestBundle(svc)
	if err != nil {
		return nil, nil, err
	}
	return svc, b, nil
}
