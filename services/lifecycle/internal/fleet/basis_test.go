package fleet

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// A plan's basis says what changed since it was made, part by part, and
// nothing when only what the controllers write (status) changed.
func TestBasisChanges(t *testing.T) {
	svc := &lifecycle.Service{ID: "s", Name: "pkg", Version: "1.0.0", Digest: "sha256:a", LifecycleState: lifecycle.StateActive, Labels: map[string]string{"a": "1"}}
	catalog := []*lifecycle.CatalogEntry{{Name: "pkg", Version: "2.0.0", Digest: "sha256:b"}, {Name: "pkg", Version: "1.0.0", Digest: "sha256:a"}}
	was := Basis(svc, inventory(), catalog)

	tests := []struct {
		name string
		edit func(svc *lifecycle.Service, inv *lifecycle.Inventory, cat []*lifecycle.CatalogEntry) []*lifecycle.CatalogEntry
		want []string
	}{
		{"nothing", func(*lifecycle.Service, *lifecycle.Inventory, []*lifecycle.CatalogEntry) []*lifecycle.CatalogEntry {
			return nil
		}, nil},
		{"status only", func(s *lifecycle.Service, _ *lifecycle.Inventory, _ []*lifecycle.CatalogEntry) []*lifecycle.CatalogEntry {
			s.Status, s.Phase = lifecycle.StatusUnhealthy, lifecycle.PhaseConfiguring
			return nil
		}, nil},
		{"version", func(s *lifecycle.Service, _ *lifecycle.Inventory, _ []*lifecycle.CatalogEntry) []*lifecycle.CatalogEntry {
			s.Version, s.Digest = "1.5.0", "sha256:c"
			return nil
		}, []string{"service version"}},
		{"labels and values", func(s *lifecycle.Service, _ *lifecycle.Inventory, _ []*lifecycle.CatalogEntry) []*lifecycle.CatalogEntry {
			s.Labels = map[string]string{"a": "2"}
			s.Values.UserOverwrite = "eDogMQo="
			return nil
		}, []string{"service labels", "service values"}},
		{"a region's Supervisor", func(_ *lifecycle.Service, inv *lifecycle.Inventory, _ []*lifecycle.CatalogEntry) []*lifecycle.CatalogEntry {
			inv.Regions[0].Supervisors[0].Version = "9.9"
			return nil
		}, []string{"inventory region " + inventory().Regions[0].Name}},
		{"a region added", func(_ *lifecycle.Service, inv *lifecycle.Inventory, _ []*lifecycle.CatalogEntry) []*lifecycle.CatalogEntry {
			inv.Regions = append(inv.Regions, lifecycle.Region{Name: "zz-new"})
			return nil
		}, []string{"inventory region zz-new"}},
		{"a version quarantined", func(_ *lifecycle.Service, _ *lifecycle.Inventory, c []*lifecycle.CatalogEntry) []*lifecycle.CatalogEntry {
			q := *c[0]
			q.Quarantine = &lifecycle.Quarantine{Reason: "bad"}
			return []*lifecycle.CatalogEntry{&q, c[1]}
		}, []string{"catalog"}},
		{"catalog order is not a change", func(_ *lifecycle.Service, _ *lifecycle.Inventory, c []*lifecycle.CatalogEntry) []*lifecycle.CatalogEntry {
			return []*lifecycle.CatalogEntry{c[1], c[0]}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, inv := svc.Clone(), inventory()
			cat := tt.edit(s, inv, catalog)
			if cat == nil {
				cat = catalog
			}
			require.Equal(t, tt.want, was.Changes(Basis(s, inv, cat)))
		})
	}
}
