package server

import (
	"fmt"
	"strings"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/ops"
)

// This file translates PUT and PATCH bodies (and PATCH's field mask) into
// a lifecycle.Change; the handler only calls it.

func acceptedOf(a *lifecyclev1.Accepted) *lifecycle.Accepted {
	if a == nil {
		return nil
	}
	return &lifecycle.Accepted{EULA: a.GetEula(), Signatures: a.GetSignatures(), AccessGrants: a.GetAccessGrants().AsMap()}
}

// overrideOf is a request's override; an empty object is an override
// without its reason (refused, naming override.reason).
func overrideOf(o *lifecyclev1.Override) *lifecycle.Override {
	if o == nil {
		return nil
	}
	return &lifecycle.Override{Reason: o.GetReason()}
}

// changeFromPut: PUT replaces the service's representation (api.md: "use
// PATCH ... to avoid accidentally clearing fields"): id, values and
// lifecycleState are required; the value layers, labels, locations,
// tenants, autoUpgrade, autoRollback, autoUpgradePrereleases, reconfigure
// and rolloutStrategy take what the body says, their defaults when it omits
// them. accepted is replaced only when given (an omission does not
// withdraw an administrator's acceptance). A source starts an upgrade when
// it differs from the installed one. The body converts as the PATCH that
// names those fields (patchOfPut), through changeOf.
func changeFromPut(req *lifecyclev1.UpdateServiceRequest) (ops.Change, error) {
	body := req.GetService()
	if body == nil {
		return ops.Change{}, invalid("the request body is required")
	}
	if body.GetId() != "" && body.GetId() != req.GetId() {
		return ops.Change{}, invalid("body id %q does not match the path id %q", body.GetId(), req.GetId())
	}
	if body.GetLifecycleState() == "" {
		return ops.Change{}, invalid("lifecycleState is required in PUT (active, inactive or paused); use PATCH to change single fields")
	}
	if body.GetValues() == nil {
		return ops.Change{}, invalid("values is required in PUT; use PATCH to change single fields")
	}
	if body.GetId() == "" {
		return ops.Change{}, invalid("id is required in PUT: the service's id, %s (PUT replaces the whole service; use PATCH to change single fields)", req.GetId())
	}
	return changeOf(patchOfPut(body))
}

// patchOfPut is a PUT body as the PATCH that changes what PUT changes:
// the body as a ServicePatch and the fields it replaces (accepted, source
// and planId only when given).
func patchOfPut(body *lifecyclev1.ServiceUpdate) (*lifecyclev1.ServicePatch, []string) {
	p := &lifecyclev1.ServicePatch{
		Values: body.GetValues(), LifecycleState: body.GetLifecycleState(),
		Labels: body.GetLabels(), Locations: body.GetLocations(), Tenants: body.GetTenants(),
		Accepted: body.GetAccepted(), Reconfigure: body.GetReconfigure(), Source: body.GetSource(),
		AutoUpgrade: body.GetAutoUpgrade(), AutoRollback: body.GetAutoRollback(), AutoUpgradePrereleases: body.GetAutoUpgradePrereleases(),
		Revision: body.Revision, Rollout: body.GetRollout(), RolloutStrategy: body.GetRolloutStrategy(),
		Override: body.GetOverride(), PlanId: body.GetPlanId(),
	}
	paths := []string{"values", "lifecycle_state", "labels", "locations", "tenants", "auto_upgrade", "auto_rollback",
		"auto_upgrade_prereleases", "reconfigure", "revision", "rollout", "rollout_strategy", "override"}
	if body.GetValues().GetEffective() != "" {
		paths = append(paths, "values.effective")
	}
	if body.GetAccepted() != nil {
		paths = append(paths, "accepted")
	}
	if body.GetPlanId() != "" {
		paths = append(paths, "plan_id")
	}
	if body.GetSource() != "" {
		paths = append(paths, "source")
	}
	return p, paths
}

// patchFields are the ServicePatch fields a mask may name.
var patchFields = map[string]bool{
	"values": true, "lifecycle_state": true, "phase": true, "labels": true, "locations": true, "accepted": true,
	"reconfigure": true, "source": true, "auto_upgrade": true, "auto_rollback": true, "tenants": true, "revision": true,
	"rollout": true, "rollout_strategy": true, "plan_id": true, "auto_upgrade_prereleases": true, "override": true,
}

var valueFieldNames = map[string]string{
	"platform_overlay": "platformOverlay", "vendor_overlay": "vendorOverlay", "user_overwrite": "userOverwrite", "effective": "effective",
}

// maskOf returns the update mask, inferring it from the set fields when a
// gRPC client sent none (the gateway always fills it from the JSON body).
func maskOf(req *lifecyclev1.PatchServiceRequest) []string {
	if m := req.GetUpdateMask(); m != nil && len(m.GetPaths()) > 0 {
		return m.GetPaths()
	}
	var paths []string
	p := req.GetService()
	if p == nil {
		return nil
	}
	if v := p.GetValues(); v != nil {
		for name, set := range map[string]bool{"platform_overlay": v.GetPlatformOverlay() != "", "vendor_overlay": v.GetVendorOverlay() != "",
			"user_overwrite": v.GetUserOverwrite() != "", "effective": v.GetEffective() != ""} {
			if set {
				paths = append(paths, "values."+name)
			}
		}
	}
	add := func(name string, set bool) {
		if set {
			paths = append(paths, name)
		}
	}
	add("lifecycle_state", p.GetLifecycleState() != "")
	add("phase", p.GetPhase() != "")
	add("labels", p.GetLabels() != nil)
	add("locations", p.GetLocations() != nil)
	add("tenants", p.GetTenants() != nil)
	add("accepted", p.GetAccepted() != nil)
	add("reconfigure", p.GetReconfigure() != nil)
	add("source", p.GetSource() != "")
	add("auto_upgrade", p.GetAutoUpgrade())
	add("auto_rollback", p.GetAutoRollback())
	add("auto_upgrade_prereleases", p.GetAutoUpgradePrereleases())
	add("revision", p.Revision != nil)
	add("plan_id", p.GetPlanId() != "")
	add("override", p.GetOverride() != nil)
	return paths
}

// changeFromPatch changes exactly the fields the mask names.
func changeFromPatch(req *lifecyclev1.PatchServiceRequest) (ops.Change, error) {
	p := req.GetService()
	if p == nil {
		p = &lifecyclev1.ServicePatch{}
	}
	c, err := changeOf(p, maskOf(req))
	if err != nil {
		return c, err
	}
	if c.LifecycleState != nil && *c.LifecycleState == lifecycle.StateDecommissioned {
		return c, fmt.Errorf("lifecycleState cannot be set to decommissioned with PATCH: use DELETE /v2/vcf-services/{id}: %w", lifecycle.ErrInvalidTransition)
	}
	return c, nil
}

// changeOf is the change that sets the fields paths name (mask paths of
// ServicePatch) to p's; PUT and PATCH both convert through it.
func changeOf(p *lifecyclev1.ServicePatch, paths []string) (ops.Change, error) {
	var c ops.Change
	for _, path := range paths {
		top, rest, _ := strings.Cut(path, ".")
		if !patchFields[top] {
			return c, invalid("field %q cannot be patched", path)
		}
		if top == "values" {
			if err := patchValues(&c, p.GetValues(), rest); err != nil {
				return c, err
			}
			continue
		}
		if top == "rollout" {
			r, err := rolloutRequestFromProto(p.GetRollout())
			if err != nil {
				return c, err
			}
			c.Rollout = r
			continue
		}
		patchField(&c, p, top)
	}
	return c, nil
}

// patchValues sets one value layer (rest) or all of them (rest empty).
func patchValues(c *ops.Change, v *lifecyclev1.OverlayValues, rest string) error {
	if c.Values == nil {
		c.Values = &lifecycle.OverlayValues{PlatformOverlay: v.GetPlatformOverlay(), VendorOverlay: v.GetVendorOverlay(),
			UserOverwrite: v.GetUserOverwrite(), Effective: v.GetEffective()}
	}
	if rest == "" {
		c.ValueFields = append(c.ValueFields, "platformOverlay", "vendorOverlay", "userOverwrite")
		return nil
	}
	name, ok := valueFieldNames[rest]
	if !ok {
		return invalid("values.%s: unknown layer (platformOverlay, vendorOverlay, userOverwrite)", rest)
	}
	c.ValueFields = append(c.ValueFields, name)
	return nil
}

// patchField sets the top-level field named top (other than values).
func patchField(c *ops.Change, p *lifecyclev1.ServicePatch, top string) {
	switch top {
	case "lifecycle_state":
		s := p.GetLifecycleState()
		c.LifecycleState = &s
	case "phase":
		s := p.GetPhase()
		c.Phase = &s
	case "labels":
		l := p.GetLabels()
		c.Labels = &l
	case "locations":
		l := p.GetLocations()
		c.Locations = &l
	case "tenants":
		l := p.GetTenants()
		c.Tenants = &l
	case "override":
		c.Override = overrideOf(p.GetOverride())
	case "accepted":
		c.Accepted = acceptedOf(p.GetAccepted())
		if c.Accepted == nil {
			c.Accepted = &lifecycle.Accepted{}
		}
	case "reconfigure":
		c.Reconfigure = p.GetReconfigure().GetEvents()
		if c.Reconfigure == nil {
			c.Reconfigure = []string{}
		}
	case "source":
		s := p.GetSource()
		c.Source = &s
	case "auto_upgrade":
		b := p.GetAutoUpgrade()
		c.AutoUpgrade = &b
	case "auto_rollback":
		b := p.GetAutoRollback()
		c.AutoRollback = &b
	case "auto_upgrade_prereleases":
		b := p.GetAutoUpgradePrereleases()
		c.AutoUpgradePrereleases = &b
	case "revision":
		c.Revision = p.Revision
	case "rollout_strategy":
		s := p.GetRolloutStrategy()
		c.RolloutStrategy = &s
	case "plan_id":
		s := p.GetPlanId()
		c.PlanID = &s
	}
}
