package lifecycle

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// ResourceDiff is how a service's resource records compare with a new
// Render: the one diff behind activation, reconfiguration, upgrade,
// rollback and the upgrade plan.
type ResourceDiff struct {
	// Changes has one entry per wanted resource, in render order.
	Changes []ResourceChange
	// Removed are records no longer wanted.
	Removed []*Resource
}

// ResourceChange pairs a wanted resource with its record, if any.
type ResourceChange struct {
	Want, Have *Resource
	// Retargeted: the record's target identity changed (e.g. a registry's
	// endpoint): the old object goes and a new one is created.
	Retargeted bool
}

// NeedsNewObject: no record yet, or the old object is being replaced.
func (c ResourceChange) NeedsNewObject() bool { return c.Have == nil || c.Retargeted }

// Current: the record already is the wanted resource, applied and Healthy
// under version (done before a restart).
func (c ResourceChange) Current(version string) bool {
	return c.Have.OwnerVersion == version && c.Have.Hash == c.Want.Hash && c.Have.Status == target.StatusHealthy
}

// DiffResources classifies wanted resources against the records.
func DiffResources(have, want []*Resource) ResourceDiff {
	existing := make(map[string]*Resource, len(have))
	for _, r := range have {
		existing[r.ID] = r
	}
	var d ResourceDiff
	wanted := make(map[string]bool, len(want))
	for _, w := range want {
		wanted[w.ID] = true
		old := existing[w.ID]
		d.Changes = append(d.Changes, ResourceChange{Want: w, Have: old, Retargeted: old != nil && old.Target != w.Target})
	}
	for _, r := range have {
		if !wanted[r.ID] {
			d.Removed = append(d.Removed, r)
		}
	}
	return d
}
