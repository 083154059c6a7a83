package steps

import (
	"slices"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// ScopeRender is rend as seen by a part of the fleet (a rollout's wave):
// the documents on those Supervisors or on none, and an inventory that
// holds only those Supervisors, so the checks that read a render's
// Supervisors (compatibility environments, dynamic pre-checks) look at
// the part alone.
func ScopeRender(rend *Rendered, sups []string) *Rendered {
	out := &Rendered{YAML: rend.YAML, Effective: rend.Effective}
	for _, d := range rend.Resources {
		if d.Supervisor == "" || slices.Contains(sups, d.Supervisor) {
			out.Resources = append(out.Resources, d)
		}
	}
	if rend.Inventory != nil {
		inv := &lifecycle.Inventory{}
		for _, r := range rend.Inventory.Regions {
			region := r
			region.Supervisors = nil
			for _, s := range r.Supervisors {
				if slices.Contains(sups, s.Name) {
					region.Supervisors = append(region.Supervisors, s)
				}
			}
			if len(region.Supervisors) > 0 {
				inv.Regions = append(inv.Regions, region)
			}
		}
		out.Inventory = inv
	}
	return out
}
