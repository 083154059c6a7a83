package steps

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"slices"
)

// LinkRegionLabel links a rendered resource to a region
// (element-types-overview.md).
const LinkRegionLabel = "services.vcfa.broadcom.com/link-region"

// ServiceSupervisors is THE rule for which Supervisors a service runs on
// (docs/decisions.md, "A service's Supervisors"): the Supervisors named by
// spec.supervisor; plus every Supervisor of each region a resource links
// with the link-region label; and, when no resource names a Supervisor or
// links a region, every Supervisor of the inventory. Install, upgrade and
// Supervisor-upgrade evaluation, Secret placement and the hook's CA lookup
// all use it, so a service made only of VCF Automation kinds is still
// checked against (and gets its Secrets on) the Supervisors it serves.
func ServiceSupervisors(docs []*lifecycle.Document, inv *lifecycle.Inventory) []string {
	set := map[string]bool{}
	regions := map[string]bool{}
	for _, d := range docs {
		if d.Supervisor != "" {
			set[d.Supervisor] = true
		}
		if r := d.Labels[LinkRegionLabel]; r != "" {
			regions[r] = true
		}
	}
	all := len(set) == 0 && len(regions) == 0
	for _, r := range inv.RegionList() {
		if !all && !regions[r.Name] {
			continue
		}
		for _, s := range r.Supervisors {
			set[s.Name] = true
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Supervisors is the rule applied to this render and the inventory it used.
func (r *Rendered) Supervisors() []string {
	return ServiceSupervisors(r.Resources, r.Inventory)
}

// InstalledSupervisors are the Supervisors the installed version runs on,
// as recorded when its resources were applied; records written before the
// rule was recorded fall back to the Supervisors their resources name.
func InstalledSupervisors(svc *lifecycle.Service, res []*lifecycle.Resource) []string {
	if svc.Supervisors != nil {
		return svc.Supervisors
	}
	var out []string
	for _, r := range res {
		if r.Supervisor != "" && !slices.Contains(out, r.Supervisor) {
			out = append(out, r.Supervisor)
		}
	}
	slices.Sort(out)
	return out
}

// OnSupervisor names where a resource is, for messages.
func OnSupervisor(s string) string {
	if s == "" {
		return ""
	}
	return " on " + s
}
