package lifecycle

import (
	"slices"
	"time"
)

// PlanTTL is how long a stored upgrade plan may be executed: a plan is an
// administrator's approval of what the fleet looked like when it was made,
// and a day-old look is not an approval of today's fleet.
const PlanTTL = 24 * time.Hour

// StoredPlan is an upgrade plan kept so the upgrade can be executed as
// approved (issue 26 §6). A service keeps only its latest stored plan.
type StoredPlan struct {
	ID          string           `json:"id"`
	ServiceID   string           `json:"serviceId"`
	FromVersion string           `json:"fromVersion"`
	ToVersion   string           `json:"toVersion"`
	Source      string           `json:"source"`
	Digest      string           `json:"digest"`
	Strategy    *RolloutStrategy `json:"strategy,omitempty"`
	// Accepted is what the approval accepted of the new version; the
	// upgrade executing the plan accepts it unless it says otherwise.
	Accepted  *Accepted `json:"accepted,omitempty"`
	Basis     PlanBasis `json:"basis"`
	CreatedAt time.Time `json:"createdAt"`
	By        string    `json:"by,omitempty"`
}

// PlanBasis fingerprints what a plan was computed from, part by part, so
// that an upgrade executing it can say what changed since: the service
// (per field), the inventory (per region) and the package's catalog.
type PlanBasis struct {
	Service   map[string]string `json:"service"`
	Inventory map[string]string `json:"inventory"`
	Catalog   string            `json:"catalog"`
}

// Changes lists, in a stable order, what differs between the basis a plan
// was made on and now: "service version", "inventory region r1",
// "catalog", ….
func (b PlanBasis) Changes(now PlanBasis) []string {
	var out []string
	out = append(out, mapChanges("service ", b.Service, now.Service)...)
	out = append(out, mapChanges("inventory region ", b.Inventory, now.Inventory)...)
	if b.Catalog != now.Catalog {
		out = append(out, "catalog")
	}
	return out
}

func mapChanges(prefix string, was, now map[string]string) []string {
	var out []string
	for k, v := range was {
		if now[k] != v {
			out = append(out, prefix+k)
		}
	}
	for k := range now {
		if _, ok := was[k]; !ok {
			out = append(out, prefix+k)
		}
	}
	slices.Sort(out)
	return out
}
