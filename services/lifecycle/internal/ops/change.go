package ops

import (
	"context"
	"encoding/base64"
	"fmt"
	"maps"
	"slices"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/commit"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"sigs.k8s.io/yaml"
)

// Change is a PUT or PATCH: nil fields are left alone.
type Change struct {
	Values         *lifecycle.OverlayValues
	ValueFields    []string // which OverlayValues fields Values sets
	LifecycleState *string
	Phase          *string
	Labels         *map[string]string
	Locations      *map[string]string
	Tenants        *map[string]string
	Accepted       *lifecycle.Accepted
	Reconfigure    []string
	Source         *string
	AutoUpgrade    *bool
	AutoRollback   *bool
	// AutoUpgradePrereleases lets automatic upgrades pick pre-releases.
	AutoUpgradePrereleases *bool
	// Rollout asks the upgrade (Source) to roll out in waves;
	// RolloutStrategy names the provider strategy the service's upgrades
	// use ("": the provider's default).
	Rollout         *lifecycle.RolloutRequest
	RolloutStrategy *string
	// Override lets the upgrade (Source) through its check ERRORs
	// (administrators only: the server's auth table); Reason is required.
	Override *lifecycle.Override
	// Revision makes the change conditional on the service's revision.
	Revision    *int64
	RequestedBy string
	// PlanID executes a stored upgrade plan (ops/plan.go).
	PlanID *string

	// strategy is the rollout the upgrade resolved to (nil: all at once).
	strategy *lifecycle.RolloutStrategy
	// planDigest is the bundle the executed plan was made for.
	planDigest string
}

func decodeOverlay(field, v string) error {
	if v == "" {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return fmt.Errorf("values.%s: not valid base64: %w: %w", field, err, lifecycle.ErrInvalidArgument)
	}
	var any any
	if err := yaml.Unmarshal(raw, &any); err != nil {
		return fmt.Errorf("values.%s: the decoded text is not YAML: %w: %w", field, err, lifecycle.ErrInvalidArgument)
	}
	return nil
}

func (c *Change) validate(bundles lifecycle.Bundles) error {
	if c.Values != nil {
		for _, f := range c.ValueFields {
			var v string
			switch f {
			case "platformOverlay":
				v = c.Values.PlatformOverlay
			case "vendorOverlay":
				v = c.Values.VendorOverlay
			case "userOverwrite":
				v = c.Values.UserOverwrite
			case "effective":
				if c.Values.Effective != "" {
					return fmt.Errorf("values.effective is read-only: it is rendered from the other layers: %w", lifecycle.ErrInvalidArgument)
				}
				continue
			default:
				return fmt.Errorf("values.%s: unknown layer (platformOverlay, vendorOverlay, userOverwrite): %w", f, lifecycle.ErrInvalidArgument)
			}
			if err := decodeOverlay(f, v); err != nil {
				return err
			}
		}
	}
	if c.LifecycleState != nil && !lifecycle.ValidState(*c.LifecycleState) {
		return fmt.Errorf("lifecycleState %q: want active, inactive or paused: %w", *c.LifecycleState, lifecycle.ErrInvalidArgument)
	}
	if c.Phase != nil && *c.Phase != "" {
		if err := validPhase(*c.Phase); err != nil {
			return err
		}
	}
	for _, e := range c.Reconfigure {
		if e != "new-supervisor" {
			return fmt.Errorf("reconfigure.events: %q is not supported; the supported event is new-supervisor: %w", e, lifecycle.ErrInvalidArgument)
		}
	}
	if c.Rollout != nil && (c.Source == nil || *c.Source == "") {
		return fmt.Errorf("rollout goes with a source: it says how that upgrade moves across the Supervisors: %w", lifecycle.ErrInvalidArgument)
	}
	if c.Rollout != nil {
		if err := fleet.Validate(c.Rollout.Strategy); err != nil {
			return err
		}
	}
	if c.Source != nil && *c.Source != "" {
		if err := lifecycle.ValidateSource(bundles, *c.Source); err != nil {
			return err
		}
	}
	for name, l := range map[string]*map[string]string{"labels": c.Labels, "locations": c.Locations, "tenants": c.Tenants} {
		if l != nil {
			if err := validateLabels(name, *l); err != nil {
				return err
			}
		}
	}
	if err := validateOverride(c.Override, c.Source != nil && *c.Source != ""); err != nil {
		return err
	}
	if c.Accepted != nil && c.Accepted.AccessGrants != nil {
		if _, err := steps.CanonicalJSON(c.Accepted.AccessGrants); err != nil {
			return fmt.Errorf("accepted.accessGrants: %w: %w", err, lifecycle.ErrInvalidArgument)
		}
	}
	return nil
}

// Apply carries out a PUT or PATCH. It validates everything first, checks
// acceptance against a fresh render when activating, then commits the
// change and starts the operation it implies (activate, configure,
// upgrade) in the same transaction.
func (r *Runner) Apply(ctx context.Context, id string, c Change) (*lifecycle.Service, error) {
	if err := c.validate(r.d.Bundles); err != nil {
		return nil, err
	}
	if err := lifecycle.CheckID(id); err != nil {
		return nil, err
	}
	current, err := r.d.Repo.Service(ctx, id)
	if err != nil {
		return nil, err
	}
	if c.phaseDelete() {
		return r.Delete(ctx, id, false, c.RequestedBy)
	}
	resolve, err := r.expandPhase(ctx, current, &c)
	if err != nil {
		return nil, err
	}
	if c.PlanID != nil && *c.PlanID != "" {
		if err := r.applyPlan(ctx, current, &c); err != nil {
			return nil, err
		}
	}
	if err := r.resolveRollout(ctx, current, &c); err != nil {
		return nil, err
	}
	upgrading := c.Source != nil && *c.Source != "" && *c.Source != current.Source
	if err := r.refuseUpgradeEarly(ctx, current, c, upgrading); err != nil {
		return nil, err
	}
	// Acceptance is checked against a render before the transaction: it
	// calls the renderer and must not hold the store.
	var wantGrants map[string]any
	activating := c.LifecycleState != nil && *c.LifecycleState == lifecycle.StateActive && current.LifecycleState == lifecycle.StateInactive
	if activating || (((c.Accepted != nil && !upgrading) || resolve) && current.Digest != "") {
		b, err := steps.LoadBundle(r.d.Bundles, current)
		if err != nil {
			return nil, err
		}
		probe := current.Clone()
		if c.Values != nil {
			applyValues(probe, c)
		}
		if wantGrants, err = steps.AccessGrants(ctx, r.d.Ports.Render(), probe, b, lifecycle.RenderInput{}); err != nil {
			return nil, fmt.Errorf("render access grants to check acceptance: %w", err)
		}
	}
	var op *lifecycle.Operation
	svc, err := r.d.Writer.Mutate(ctx, id, func(tx lifecycle.Tx, svc *lifecycle.Service) error {
		op = nil
		if err := commit.CheckRevision(svc, c.Revision); err != nil {
			return err
		}
		if svc.LifecycleState == lifecycle.StateDecommissioned {
			return fmt.Errorf("service %s is being deleted: %w", id, lifecycle.ErrConflict)
		}
		var err error
		op, err = applyChange(&r.d, svc, c, wantGrants)
		if err != nil {
			return err
		}
		if resolve && op == nil {
			resolveAcceptance(svc, wantGrants)
		}
		if op != nil {
			if svc.ActiveOperation != "" && svc.ActiveOperation != op.ID {
				return fmt.Errorf("service %s: a %s operation is in progress (%s): %w", id, svc.Progress.TypeOr("previous"), svc.ActiveOperation, lifecycle.ErrConflict)
			}
			running(svc, op)
			return tx.PutOperation(op)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if op != nil {
		r.enqueue(ctx, op)
	}
	return svc, nil
}

func applyValues(svc *lifecycle.Service, c Change) {
	for _, f := range c.ValueFields {
		switch f {
		case "platformOverlay":
			svc.Values.PlatformOverlay = c.Values.PlatformOverlay
		case "vendorOverlay":
			svc.Values.VendorOverlay = c.Values.VendorOverlay
		case "userOverwrite":
			svc.Values.UserOverwrite = c.Values.UserOverwrite
		}
	}
}

// applyChange edits svc in place and returns the operation to start, if
// any. It must be repeatable (the transaction may retry).
func applyChange(d *Deps, svc *lifecycle.Service, c Change, wantGrants map[string]any) (*lifecycle.Operation, error) {
	busy := svc.ActiveOperation != ""
	before := svc.Values
	upgrade := c.Source != nil && *c.Source != "" && *c.Source != svc.Source
	fields := c
	if upgrade {
		// What an upgrade request accepts is the new version's: it goes
		// with the operation and replaces the service's once it succeeds.
		fields.Accepted = nil
	}
	valuesChanged := applyFields(svc, fields, wantGrants)
	if op, handled, err := inMaintenance(d, svc, c, valuesChanged); handled {
		if err == nil && valuesChanged {
			svc.Values = before
		}
		return op, err
	}

	// Version change: an upgrade.
	if c.Source != nil && *c.Source != "" && *c.Source != svc.Source {
		if busy {
			return nil, fmt.Errorf("service %s: cannot start an upgrade while a %s operation is in progress: %w", svc.ID, svc.Progress.TypeOr("previous"), lifecycle.ErrConflict)
		}
		if svc.Digest == "" {
			return nil, fmt.Errorf("service %s has no installed bundle yet: %w", svc.ID, lifecycle.ErrFailedPrecondition)
		}
		if c.LifecycleState != nil && *c.LifecycleState != svc.LifecycleState {
			return nil, fmt.Errorf("change either source (an upgrade) or lifecycleState in one request, not both: %w", lifecycle.ErrInvalidArgument)
		}
		switch svc.LifecycleState {
		case lifecycle.StatePaused:
			// Decided (docs/decisions.md, "Lifecycle semantics"): the
			// administrator paused it for a reason; an upgrade would undo that.
			return nil, fmt.Errorf("service %s is paused: resume it before upgrading: %w", svc.NameOrID(), lifecycle.ErrConflict)
		case lifecycle.StateInactive:
			return startInactiveUpgrade(d, svc, *c.Source, c.RequestedBy), nil
		}
		var op *lifecycle.Operation
		if c.strategy != nil {
			op = startRollout(d, svc, *c.Source, c.planDigest, false, c.RequestedBy, c.strategy)
		} else {
			op = startUpgrade(d, svc, *c.Source, c.planDigest, false, c.RequestedBy)
		}
		if c.PlanID != nil {
			op.Params.PlanID = *c.PlanID
		}
		op.Override = newOverride(c.Override, c.RequestedBy, d.Now())
		if c.Accepted != nil {
			a := *c.Accepted
			a.AccessGrants = lifecycle.CloneJSON(a.AccessGrants)
			op.Accepted = &a
		}
		return op, nil
	}

	if c.LifecycleState != nil && *c.LifecycleState != svc.LifecycleState {
		return transition(d, svc, *c.LifecycleState, busy, wantGrants, c.RequestedBy)
	}

	// Re-apply the configuration of an active service.
	reconfigure := len(c.Reconfigure) > 0 || (c.Phase != nil && *c.Phase != "")
	if svc.LifecycleState == lifecycle.StateActive && (valuesChanged || reconfigure) {
		if busy {
			return nil, fmt.Errorf("service %s: cannot reconfigure while a %s operation is in progress: %w", svc.ID, svc.Progress.TypeOr("previous"), lifecycle.ErrConflict)
		}
		phase := lifecycle.PhaseConfiguring
		if valuesChanged {
			phase = lifecycle.PhaseEditing
		}
		if c.Phase != nil && *c.Phase != "" {
			phase = *c.Phase
		}
		return startReconfigure(d, svc, phase, c.RequestedBy), nil
	}
	return nil, nil
}

// applyFields sets the plain fields a change carries and reports whether
// the values changed.
func applyFields(svc *lifecycle.Service, c Change, wantGrants map[string]any) (valuesChanged bool) {
	if c.Labels != nil {
		svc.Labels = maps.Clone(*c.Labels)
	}
	if c.Locations != nil {
		svc.Locations = maps.Clone(*c.Locations)
	}
	if c.Tenants != nil {
		svc.Tenants = maps.Clone(*c.Tenants)
	}
	if c.AutoUpgrade != nil {
		svc.AutoUpgrade = *c.AutoUpgrade
		if *c.AutoUpgrade {
			svc.UpgradeBlockedFor = ""
		}
	}
	if c.AutoRollback != nil {
		svc.AutoRollback = *c.AutoRollback
	}
	if c.AutoUpgradePrereleases != nil {
		svc.AutoUpgradePrereleases = *c.AutoUpgradePrereleases
	}
	if c.Accepted != nil {
		svc.Accepted = lifecycle.Accepted{EULA: c.Accepted.EULA, Signatures: c.Accepted.Signatures, AccessGrants: lifecycle.CloneJSON(c.Accepted.AccessGrants)}
		if svc.Status == lifecycle.StatusUnresolved || svc.Status == lifecycle.StatusReady {
			if acceptanceComplete(svc.Accepted, wantGrants) == nil {
				svc.Status = lifecycle.StatusReady
			} else {
				svc.Status = lifecycle.StatusUnresolved
			}
		}
	}
	if c.Values != nil {
		before := svc.Values
		applyValues(svc, c)
		valuesChanged = before != svc.Values
	}
	if c.Reconfigure != nil {
		svc.Reconfigure = nil
		if len(c.Reconfigure) > 0 {
			svc.Reconfigure = slices.Clone(c.Reconfigure)
		}
	}
	if c.RolloutStrategy != nil {
		svc.RolloutStrategy = *c.RolloutStrategy
	}
	return valuesChanged
}

// transition moves the lifecycle state: activation and deactivation are
// operations; pause and resume happen in the request's transaction and
// are recorded in the history as finished operations.
func transition(d *Deps, svc *lifecycle.Service, to string, busy bool, wantGrants map[string]any, by string) (*lifecycle.Operation, error) {
	if err := lifecycle.CheckTransition(svc.LifecycleState, to); err != nil {
		return nil, err
	}
	if busy {
		return nil, fmt.Errorf("service %s: cannot move %s -> %s while a %s operation is in progress: %w", svc.ID, svc.LifecycleState, to, svc.Progress.TypeOr("previous"), lifecycle.ErrConflict)
	}
	switch {
	case svc.LifecycleState == lifecycle.StateInactive && to == lifecycle.StateActive:
		return startActivation(d, svc, wantGrants, by)
	case to == lifecycle.StateInactive:
		return startDeactivation(d, svc, by), nil
	case to == lifecycle.StatePaused:
		recordInstant(d, svc, lifecycle.OpPause, by)
		svc.LifecycleState = lifecycle.StatePaused
	case svc.LifecycleState == lifecycle.StatePaused && to == lifecycle.StateActive:
		recordInstant(d, svc, lifecycle.OpResume, by)
		svc.LifecycleState = lifecycle.StateActive
		svc.Status = lifecycle.StatusBusy
	}
	// These transitions are done within the request: no operation runs.
	svc.Phase = ""
	return nil, nil
}

// refuseUpgradeEarly refuses within the request what is known before an
// upgrade starts: an override without one, a version the catalog knows to
// be installed, older or quarantined, and a registered version whose
// changed terms the request does not accept.
func (r *Runner) refuseUpgradeEarly(ctx context.Context, current *lifecycle.Service, c Change, upgrading bool) error {
	if c.Override != nil && !upgrading {
		return fmt.Errorf("override goes with a new source (an upgrade); %s already runs %s: %w", current.ID, current.Source, lifecycle.ErrInvalidArgument)
	}
	if !upgrading {
		return nil
	}
	if err := refuseKnownVersion(ctx, &r.d, current, *c.Source); err != nil {
		return err
	}
	return r.refuseUnaccepted(ctx, current, *c.Source, c.Accepted)
}

// resolveRollout checks the strategy a change names and, for an upgrade,
// resolves the rollout it runs (the request's, the service's, the
// provider's default, or none).
func (r *Runner) resolveRollout(ctx context.Context, current *lifecycle.Service, c *Change) error {
	upgrade := c.Source != nil && *c.Source != "" && *c.Source != current.Source
	if c.RolloutStrategy == nil && !upgrade {
		return nil
	}
	stored, err := r.d.Repo.RolloutStrategies(ctx)
	if err != nil {
		return err
	}
	named := current.RolloutStrategy
	if c.RolloutStrategy != nil {
		named = *c.RolloutStrategy
		if _, err := fleet.Resolve(nil, named, stored); err != nil {
			return fmt.Errorf("rolloutStrategy: %w", err)
		}
	}
	if upgrade {
		c.strategy, err = fleet.Resolve(c.Rollout, named, stored)
	}
	return err
}
