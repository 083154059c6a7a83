package steps

import (
	"context"
	"encoding/base64"
	"errors"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// RenderFor renders once per run (a restarted run renders again, with the
// inventory as it is then) and keeps the effective values on the service.
func RenderFor(ctx context.Context, rp RenderPorts, w Writer, scratch map[string]any, svc *lifecycle.Service, b *bundle.Bundle) (*Rendered, error) {
	key := "render/" + b.Digest
	if v, ok := scratch[key].(*Rendered); ok {
		return v, nil
	}
	rend, err := Render(ctx, rp, svc, b, lifecycle.RenderInput{})
	if err != nil {
		if errors.Is(err, lifecycle.ErrInvalidArgument) {
			return nil, lifecycle.Blocked(lifecycle.ErrTypeConfiguration, err)
		}
		return nil, err
	}
	scratch[key] = rend
	effective := base64.StdEncoding.EncodeToString(rend.Effective)
	if _, err := w.Mutate(ctx, svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
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

func Layers(ctx context.Context, inventory InventoryReader, svc *lifecycle.Service, in lifecycle.RenderInput) (lifecycle.ValueLayers, error) {
	inv := in.Inventory
	if inv == nil {
		var err error
		if inv, err = inventory.Inventory(ctx); err != nil {
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

// Rendered is one render of a service's bundle.
type Rendered struct {
	Resources []*lifecycle.Document
	YAML      []byte
	Effective []byte

	// The documents parsed and hashed once: an operation places the same
	// Render in several steps (pre-checks, apply), and parsing thousands
	// of YAML documents was the largest cost of a big activation.
	parseOnce sync.Once
	parsed    []lifecycle.ParsedDoc
	parseErr  error
	// Inventory is the platform inventory the render used: the regions
	// and Supervisors serviceSupervisors reads.
	Inventory *lifecycle.Inventory
}

// Place turns the render into resource records owned by version, on the
// Supervisors the service runs on (serviceSupervisors).
func (r *Rendered) Place(svc *lifecycle.Service, version string, now time.Time) ([]*lifecycle.Resource, error) {
	r.parseOnce.Do(func() { r.parsed, r.parseErr = lifecycle.ParseDocs(r.Resources) })
	if r.parseErr != nil {
		return nil, r.parseErr
	}
	return lifecycle.PlaceResources(svc, version, r.Resources, r.parsed, r.Supervisors(), now)
}

func Render(ctx context.Context, rp RenderPorts, svc *lifecycle.Service, b *bundle.Bundle, in lifecycle.RenderInput) (*Rendered, error) {
	layers, err := Layers(ctx, rp.Inventory, svc, in)
	if err != nil {
		return nil, err
	}
	out, err := rp.Renderer.RenderResources(ctx, lifecycle.RenderRequest{Bundle: b, Values: layers})
	if err != nil {
		return nil, err
	}
	return &Rendered{Resources: out.Documents, YAML: out.YAML, Effective: out.Effective, Inventory: layers.Inventory}, nil
}

func AccessGrants(ctx context.Context, rp RenderPorts, svc *lifecycle.Service, b *bundle.Bundle, in lifecycle.RenderInput) (map[string]any, error) {
	layers, err := Layers(ctx, rp.Inventory, svc, in)
	if err != nil {
		return nil, err
	}
	return rp.Renderer.RenderAccessGrants(ctx, lifecycle.RenderRequest{Bundle: b, Values: layers})
}
