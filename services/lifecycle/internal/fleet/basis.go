package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Basis fingerprints what an upgrade plan is computed from: the service's
// fields that decide what the upgrade does (not its status, which the
// controllers rewrite all the time), each region of the inventory, and the
// package's catalog (versions, digests, quarantines). A stored plan keeps
// it; executing the plan compares it with a fresh one (PlanBasis.Changes).
func Basis(svc *lifecycle.Service, inv *lifecycle.Inventory, catalog []*lifecycle.CatalogEntry) lifecycle.PlanBasis {
	b := lifecycle.PlanBasis{
		Service: map[string]string{
			"version":         fingerprint(svc.Version, svc.Digest),
			"source":          fingerprint(svc.Source),
			"values":          fingerprint(svc.Values),
			"lifecycleState":  fingerprint(svc.LifecycleState),
			"labels":          fingerprint(svc.Labels),
			"locations":       fingerprint(svc.Locations),
			"tenants":         fingerprint(svc.Tenants),
			"supervisors":     fingerprint(svc.Supervisors),
			"builtIn":         fingerprint(svc.BuiltIn),
			"rolloutStrategy": fingerprint(svc.RolloutStrategy),
		},
		Inventory: map[string]string{},
	}
	for _, r := range inv.RegionList() {
		b.Inventory[r.Name] = fingerprint(r)
	}
	type entry struct {
		Version, Digest string
		Quarantined     bool
	}
	entries := make([]entry, 0, len(catalog))
	for _, e := range catalog {
		entries = append(entries, entry{e.Version, e.Digest, e.Quarantine != nil})
	}
	slices.SortFunc(entries, func(a, b entry) int {
		if a.Version < b.Version {
			return -1
		}
		if a.Version > b.Version {
			return 1
		}
		return 0
	})
	b.Catalog = fingerprint(entries)
	return b
}

// fingerprint is a short hash of v's JSON (maps encode with sorted keys).
func fingerprint(v ...any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		// Every value fingerprinted here is plain data; a failure would
		// be a programming error, and a fingerprint that never matches
		// makes the plan refuse to run rather than run on a wrong basis.
		return "unencodable: " + err.Error()
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:12])
}
