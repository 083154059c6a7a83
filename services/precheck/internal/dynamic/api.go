package dynamic

import (
	"fmt"
	"slices"
	"strings"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
)

// apiCheck is ApiCompatibility: the target the resource is staged on
// serves its apiVersion and kind. A Supervisor-scoped kind (one with
// spec.supervisor) is checked against that Supervisor's facts; any other
// against PlatformFacts.targets entry named by StagedResource.target. An
// Overlay is served by the Service Manager itself. Supported entries are
// "apiVersion/Kind", or a bare "apiVersion" for every kind of it.
func (r *run) apiCheck(res *resource) *commonv1.Check {
	gvk := res.apiVersion + "/" + res.kind
	if res.kind == kindOverlay {
		if res.apiVersion != elementAPIVersion {
			return failed(CheckAPICompatibility, fmt.Sprintf("%s is not served: the Service Manager serves Overlay as %s", gvk, elementAPIVersion))
		}
		return passed(CheckAPICompatibility, fmt.Sprintf("%s is served by the Service Manager itself", gvk))
	}
	var target string
	var served []string
	if sup := res.supervisor(); sup != "" {
		facts := r.supervisorFacts(sup)
		if facts == nil {
			return failed(CheckAPICompatibility, fmt.Sprintf("Supervisor %s is not in the platform inventory", sup))
		}
		target, served = "Supervisor "+sup, facts.GetSupportedApiVersions()
	} else {
		name := res.staged.GetTarget()
		if name == "" {
			return failed(CheckAPICompatibility, "the staging result names no target to check the API against")
		}
		found := false
		for _, t := range r.req.GetPlatform().GetTargets() {
			if t.GetName() == name {
				target, served, found = "target "+name, t.GetSupportedApiVersions(), true
				break
			}
		}
		if !found {
			return failed(CheckAPICompatibility, fmt.Sprintf("target %s is not among the platform's targets", name))
		}
	}
	if len(served) == 0 {
		return failed(CheckAPICompatibility, fmt.Sprintf("%s reported no supported API versions", target))
	}
	if slices.Contains(served, gvk) || slices.Contains(served, res.apiVersion) {
		return passed(CheckAPICompatibility, fmt.Sprintf("%s serves %s", target, gvk))
	}
	return failed(CheckAPICompatibility, fmt.Sprintf("%s does not serve %s (it serves %s)", target, gvk, strings.Join(served, ", ")))
}
