package manager

import (
	"context"
	"encoding/base64"
	"errors"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// renderFor renders once per run (a restarted run renders again, with the
// inventory as it is then) and keeps the effective values on the service.
func (m *core) renderFor(ctx context.Context, r *run, svc *lifecycle.Service, b *bundle.Bundle) (*rendered, error) {
	key := "render/" + b.Digest
	if v, ok := r.scratch[key].(*rendered); ok {
		return v, nil
	}
	rend, err := m.render(ctx, svc, b, RenderInput{})
	if err != nil {
		if errors.Is(err, lifecycle.ErrInvalidArgument) {
			return nil, lifecycle.Blocked(lifecycle.ErrTypeConfiguration, err)
		}
		return nil, err
	}
	if r.scratch == nil {
		r.scratch = map[string]any{}
	}
	r.scratch[key] = rend
	effective := base64.StdEncoding.EncodeToString(rend.Effective)
	if _, err := m.Mutate(ctx, svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		// Only the installed version's render is the service's effective
		// configuration; an upgrade's checks render the next one.
		if s.Digest == b.Digest {
			s.Values.Effective = effective
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return rend, nil
}

func (m *core) layers(ctx context.Context, svc *lifecycle.Service, in RenderInput) (lifecycle.ValueLayers, error) {
	inv := in.Inventory
	if inv == nil {
		var err error
		if inv, err = m.repo.Inventory(ctx); err != nil {
			return lifecycle.ValueLayers{}, err
		}
	}
	pick := func(override *string, stored string) string {
		if override != nil {
			return *override
		}
		return stored
	}
	return lifecycle.ValueLayers{
		Inventory:       inv,
		PlatformOverlay: pick(in.PlatformOverlay, svc.Values.PlatformOverlay),
		VendorOverlay:   pick(in.VendorOverlay, svc.Values.VendorOverlay),
		UserOverwrite:   pick(in.UserOverwrite, svc.Values.UserOverwrite),
	}, nil
}

// rendered is one render of a service's bundle.
type rendered struct {
	Resources []*lifecycle.Document
	YAML      []byte
	Effective []byte

	// The documents parsed and hashed once: an operation places the same
	// render in several steps (pre-checks, apply), and parsing thousands
	// of YAML documents was the largest cost of a big activation.
	parseOnce sync.Once
	parsed    []lifecycle.ParsedDoc
	parseErr  error
	// Inventory is the platform inventory the render used: the regions
	// and Supervisors serviceSupervisors reads.
	Inventory *lifecycle.Inventory
}

// place turns the render into resource records owned by version, on the
// Supervisors the service runs on (serviceSupervisors).
func (r *rendered) place(svc *lifecycle.Service, version string, now time.Time) ([]*lifecycle.Resource, error) {
	r.parseOnce.Do(func() { r.parsed, r.parseErr = lifecycle.ParseDocs(r.Resources) })
	if r.parseErr != nil {
		return nil, r.parseErr
	}
	return lifecycle.PlaceResources(svc, version, r.Resources, r.parsed, r.supervisors(), now)
}

func (m *core) render(ctx context.Context, svc *lifecycle.Service, b *bundle.Bundle, in RenderInput) (*rendered, error) {
	layers, err := m.layers(ctx, svc, in)
	if err != nil {
		return nil, err
	}
	out, err := m.peers.Renderer.RenderResources(ctx, lifecycle.RenderRequest{Bundle: b, Values: layers})
	if err != nil {
		return nil, err
	}
	return &rendered{Resources: out.Documents, YAML: out.YAML, Effective: out.Effective, Inventory: layers.Inventory}, nil
}

func (m *core) accessGrants(ctx context.Context, svc *lifecycle.Service, b *bundle.Bundle, in RenderInput) (map[string]any, error) {
	layers, err := m.layers(ctx, svc, in)
	if err != nil {
		return nil, err
	}
	return m.peers.Renderer.RenderAccessGrants(ctx, lifecycle.RenderRequest{Bundle: b, Values: layers})
}
