package lifecycle

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// CreateRequest is what POST /v2/vcf-services carries.
type CreateRequest struct {
	Source, Name, Version string
	AutoUpgrade           bool
	AutoRollback          bool
	BuiltIn               bool
	Labels, Locations     map[string]string
	RequestedBy           string
}

// ValidateSource checks a bundle URL against the accepted schemes.
func (m *Manager) ValidateSource(source string) error {
	if strings.TrimSpace(source) == "" {
		return fmt.Errorf("source is required: a bundle URL (https://…/bundle.tar or oci://registry/repository:tag): %w", ErrInvalidArgument)
	}
	if err := bundle.ValidateSource(source, m.cfg.AllowInsecureSources); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalidArgument)
	}
	return nil
}

func validateLabels(field string, m map[string]string) error {
	for k, v := range m {
		if strings.TrimSpace(k) == "" {
			return fmt.Errorf("%s: empty key: %w", field, ErrInvalidArgument)
		}
		if len(k) > 253 || len(v) > 1024 {
			return fmt.Errorf("%s[%q]: key at most 253 and value at most 1024 characters: %w", field, k, ErrInvalidArgument)
		}
	}
	return nil
}

// Create registers a new service, inactive and Busy while its bundle is
// downloaded, extracted and validated by a register operation.
func (m *Manager) Create(ctx context.Context, req CreateRequest) (*Service, error) {
	if err := m.ValidateSource(req.Source); err != nil {
		return nil, err
	}
	if err := validateLabels("labels", req.Labels); err != nil {
		return nil, err
	}
	if err := validateLabels("locations", req.Locations); err != nil {
		return nil, err
	}
	now := m.now()
	svc := &Service{
		ID:             newServiceID(),
		Name:           req.Name,
		Version:        req.Version,
		Source:         req.Source,
		Status:         StatusBusy,
		LifecycleState: StateInactive,
		Phase:          PhaseResolving,
		Labels:         req.Labels,
		Locations:      req.Locations,
		AutoUpgrade:    req.AutoUpgrade,
		AutoRollback:   req.AutoRollback,
		BuiltIn:        req.BuiltIn,
		CreatedAt:      now,
		UpdatedAt:      now,
	}
	op := m.newOperation(svc, OpRegister, req.RequestedBy, OperationParams{Source: req.Source, Name: req.Name, Version: req.Version, Phase: PhaseResolving},
		"download", "validate")
	op.ToVersion = req.Version
	svc.ActiveOperation = op.ID
	svc.Progress = &Progress{OperationID: op.ID, Type: op.Type, Step: "download", Percent: -1}
	err := m.update(ctx, func(tx Tx) error {
		if err := tx.PutService(svc); err != nil {
			return err
		}
		return tx.PutOperation(op)
	})
	if err != nil {
		return nil, fmt.Errorf("create service: %w", err)
	}
	m.enqueue(ctx, op)
	return svc.Clone(), nil
}

// Get returns a service by id.
func (m *Manager) Get(ctx context.Context, id string) (*Service, error) {
	if !strings.HasPrefix(id, IDPrefix) {
		return nil, fmt.Errorf("service %q: ids look like %s<uuid>: %w", id, IDPrefix, ErrNotFound)
	}
	return m.repo.Service(ctx, id)
}

// Bundle returns a service's bundle, nil while it is still downloading.
func (m *Manager) Bundle(svc *Service) (*bundle.Bundle, error) {
	if svc.Digest == "" {
		return nil, nil
	}
	return m.bundles.Load(svc.Digest)
}

// StateView is api.md's State.
type StateView struct {
	Resources    []*Resource
	ErrorDetails []ErrorDetail
	PreCheck     *PreCheckReport
	Progress     *Progress
	Orphans      []Orphan
}

// State returns every resource's state and the structured errors.
func (m *Manager) State(ctx context.Context, id string) (*StateView, error) {
	svc, err := m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	res, err := m.repo.Resources(ctx, id)
	if err != nil {
		return nil, err
	}
	view := &StateView{Resources: res, ErrorDetails: slices.Clone(svc.ErrorDetails), PreCheck: svc.PreCheck, Progress: svc.Progress}
	for _, r := range res {
		switch r.Status {
		case StatusUnhealthy:
			view.ErrorDetails = append(view.ErrorDetails, ErrorDetail{Type: ErrTypeResource, Severity: SeverityError,
				Message: fmt.Sprintf("%s %s%s: %s", r.Kind, r.Name, onSupervisor(r.Supervisor), r.Message)})
		case StatusBusy:
			if svc.LifecycleState == StateActive {
				view.ErrorDetails = append(view.ErrorDetails, ErrorDetail{Type: ErrTypeResource, Severity: SeverityWarn,
					Message: fmt.Sprintf("%s %s%s: %s", r.Kind, r.Name, onSupervisor(r.Supervisor), r.Message)})
			}
		}
	}
	if ops, err := m.repo.Operations(ctx, id); err == nil {
		for _, op := range ops {
			view.Orphans = append(view.Orphans, op.Orphans...)
		}
	}
	return view, nil
}

func onSupervisor(s string) string {
	if s == "" {
		return ""
	}
	return " on " + s
}

// Change is a PUT or PATCH: nil fields are left alone.
type Change struct {
	Values         *OverlayValues
	ValueFields    []string // which OverlayValues fields Values sets
	LifecycleState *string
	Phase          *string
	Labels         *map[string]string
	Locations      *map[string]string
	Tenants        *map[string]string
	Accepted       *Accepted
	Reconfigure    []string
	Source         *string
	AutoUpgrade    *bool
	AutoRollback   *bool
	// Revision makes the change conditional on the service's revision.
	Revision    *int64
	RequestedBy string
}

func decodeOverlay(field, v string) error {
	if v == "" {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		return fmt.Errorf("values.%s: not valid base64: %w: %w", field, err, ErrInvalidArgument)
	}
	var any any
	if err := yaml.Unmarshal(raw, &any); err != nil {
		return fmt.Errorf("values.%s: the decoded text is not YAML: %w: %w", field, err, ErrInvalidArgument)
	}
	return nil
}

func (c *Change) validate(m *Manager) error {
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
					return fmt.Errorf("values.effective is read-only: it is rendered from the other layers: %w", ErrInvalidArgument)
				}
				continue
			default:
				return fmt.Errorf("values.%s: unknown layer (platformOverlay, vendorOverlay, userOverwrite): %w", f, ErrInvalidArgument)
			}
			if err := decodeOverlay(f, v); err != nil {
				return err
			}
		}
	}
	if c.LifecycleState != nil && !ValidState(*c.LifecycleState) {
		return fmt.Errorf("lifecycleState %q: want active, inactive or paused: %w", *c.LifecycleState, ErrInvalidArgument)
	}
	if c.Phase != nil && *c.Phase != "" {
		switch *c.Phase {
		case PhaseConfiguring, PhaseEditing, PhasePublishing:
		default:
			if !slices.Contains(Phases, *c.Phase) {
				return fmt.Errorf("phase %q: want one of %s: %w", *c.Phase, strings.Join(Phases, ", "), ErrInvalidArgument)
			}
			return fmt.Errorf("phase %s is set by the Service Manager itself; a client may request Configuring, Editing or Publishing (re-apply the current configuration): %w", *c.Phase, ErrInvalidArgument)
		}
	}
	for _, e := range c.Reconfigure {
		if e != "new-supervisor" {
			return fmt.Errorf("reconfigure.events: %q is not supported; the supported event is new-supervisor: %w", e, ErrInvalidArgument)
		}
	}
	if c.Source != nil && *c.Source != "" {
		if err := m.ValidateSource(*c.Source); err != nil {
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
	if c.Accepted != nil && c.Accepted.AccessGrants != nil {
		if _, err := canonicalJSON(c.Accepted.AccessGrants); err != nil {
			return fmt.Errorf("accepted.accessGrants: %w: %w", err, ErrInvalidArgument)
		}
	}
	return nil
}

// Apply carries out a PUT or PATCH. It validates everything first, checks
// acceptance against a fresh render when activating, then commits the
// change and starts the operation it implies (activate, configure,
// upgrade) in the same transaction.
func (m *Manager) Apply(ctx context.Context, id string, c Change) (*Service, error) {
	if err := c.validate(m); err != nil {
		return nil, err
	}
	current, err := m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	// Acceptance is checked against a render before the transaction: it
	// calls the renderer and must not hold the store.
	var wantGrants map[string]any
	activating := c.LifecycleState != nil && *c.LifecycleState == StateActive && current.LifecycleState == StateInactive
	if activating || (c.Accepted != nil && current.Digest != "") {
		b, err := m.loadBundle(current)
		if err != nil {
			return nil, err
		}
		probe := current.Clone()
		if c.Values != nil {
			applyValues(probe, c)
		}
		if wantGrants, err = m.accessGrants(ctx, probe, b, RenderInput{}); err != nil {
			return nil, fmt.Errorf("render access grants to check acceptance: %w", err)
		}
	}
	var op *Operation
	svc, err := m.mutate(ctx, id, func(tx Tx, svc *Service) error {
		op = nil
		if c.Revision != nil && *c.Revision != svc.Revision {
			return fmt.Errorf("service %s is at revision %d, the request expected %d: re-read it and retry: %w", id, svc.Revision, *c.Revision, ErrConflict)
		}
		if svc.LifecycleState == StateDecommissioned {
			return fmt.Errorf("service %s is being deleted: %w", id, ErrConflict)
		}
		var err error
		op, err = m.applyChange(svc, c, wantGrants)
		if err != nil {
			return err
		}
		if op != nil {
			if svc.ActiveOperation != "" && svc.ActiveOperation != op.ID {
				return fmt.Errorf("service %s: a %s operation is in progress (%s): %w", id, svc.Progress.typeOr("previous"), svc.ActiveOperation, ErrConflict)
			}
			svc.ActiveOperation = op.ID
			svc.Progress = &Progress{OperationID: op.ID, Type: op.Type, Step: op.Steps[0].Name, Percent: -1}
			return tx.PutOperation(op)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if op != nil {
		m.enqueue(ctx, op)
	}
	m.kickControllers()
	return svc, nil
}

func (p *Progress) typeOr(def string) string {
	if p == nil || p.Type == "" {
		return def
	}
	return p.Type
}

func applyValues(svc *Service, c Change) {
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
func (m *Manager) applyChange(svc *Service, c Change, wantGrants map[string]any) (*Operation, error) {
	busy := svc.ActiveOperation != ""
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
	if c.Accepted != nil {
		svc.Accepted = Accepted{EULA: c.Accepted.EULA, Signatures: c.Accepted.Signatures, AccessGrants: cloneJSON(c.Accepted.AccessGrants)}
		if svc.Status == StatusUnresolved || svc.Status == StatusReady {
			if acceptanceComplete(svc.Accepted, wantGrants) == nil {
				svc.Status = StatusReady
			} else {
				svc.Status = StatusUnresolved
			}
		}
	}
	valuesChanged := false
	if c.Values != nil {
		before := svc.Values
		applyValues(svc, c)
		valuesChanged = before != svc.Values
	}
	if c.Reconfigure != nil {
		svc.Reconfigure = slices.Clone(c.Reconfigure)
	}

	// Version change: an upgrade.
	if c.Source != nil && *c.Source != "" && *c.Source != svc.Source {
		if busy {
			return nil, fmt.Errorf("service %s: cannot start an upgrade while a %s operation is in progress: %w", svc.ID, svc.Progress.typeOr("previous"), ErrConflict)
		}
		if svc.Digest == "" {
			return nil, fmt.Errorf("service %s has no installed bundle yet: %w", svc.ID, ErrFailedPrecondition)
		}
		if c.LifecycleState != nil && *c.LifecycleState != svc.LifecycleState {
			return nil, fmt.Errorf("change either source (an upgrade) or lifecycleState in one request, not both: %w", ErrInvalidArgument)
		}
		return m.startUpgrade(svc, *c.Source, "", false, c.RequestedBy), nil
	}

	// Lifecycle transitions.
	if c.LifecycleState != nil && *c.LifecycleState != svc.LifecycleState {
		to := *c.LifecycleState
		if err := CheckTransition(svc.LifecycleState, to); err != nil {
			return nil, err
		}
		if busy {
			return nil, fmt.Errorf("service %s: cannot move %s -> %s while a %s operation is in progress: %w", svc.ID, svc.LifecycleState, to, svc.Progress.typeOr("previous"), ErrConflict)
		}
		switch {
		case svc.LifecycleState == StateInactive && to == StateActive:
			return m.startActivation(svc, wantGrants, c.RequestedBy)
		case to == StateInactive:
			m.recordInstant(svc, OpDeactivate, c.RequestedBy)
			svc.LifecycleState = StateInactive
			svc.Status = StatusReady
			svc.Phase = PhaseUninstalling
			return nil, nil
		case to == StatePaused:
			m.recordInstant(svc, OpPause, c.RequestedBy)
			svc.LifecycleState = StatePaused
			return nil, nil
		case svc.LifecycleState == StatePaused && to == StateActive:
			m.recordInstant(svc, OpResume, c.RequestedBy)
			svc.LifecycleState = StateActive
			svc.Status = StatusBusy
			return nil, nil
		}
	}

	// Re-apply the configuration of an active service.
	reconfigure := len(c.Reconfigure) > 0 || (c.Phase != nil && *c.Phase != "")
	if svc.LifecycleState == StateActive && (valuesChanged || reconfigure) {
		if busy {
			return nil, fmt.Errorf("service %s: cannot reconfigure while a %s operation is in progress: %w", svc.ID, svc.Progress.typeOr("previous"), ErrConflict)
		}
		phase := PhaseConfiguring
		if valuesChanged {
			phase = PhaseEditing
		}
		if c.Phase != nil && *c.Phase != "" {
			phase = *c.Phase
		}
		op := m.newOperation(svc, OpConfigure, c.RequestedBy, OperationParams{Phase: phase}, "render", "compatibility", "prechecks", "apply")
		op.FromVersion, op.ToVersion = svc.Version, svc.Version
		svc.Phase, svc.Status = phase, StatusBusy
		return op, nil
	}
	return nil, nil
}

// acceptanceComplete says what is missing for activation.
func acceptanceComplete(a Accepted, want map[string]any) error {
	var missing []string
	if !a.EULA {
		missing = append(missing, "accepted.eula must be true")
	}
	if !a.Signatures {
		missing = append(missing, "accepted.signatures must be true")
	}
	if !sameGrants(a.AccessGrants, want) {
		got, _ := canonicalJSON(a.AccessGrants)
		exp, _ := canonicalJSON(want)
		missing = append(missing, fmt.Sprintf("accepted.accessGrants must equal POST /render-access-grants output verbatim: expected %s, got %s", exp, got))
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(missing, "; "), ErrFailedPrecondition)
	}
	return nil
}

func (m *Manager) startActivation(svc *Service, wantGrants map[string]any, by string) (*Operation, error) {
	switch svc.Status {
	case StatusReady, StatusUnresolved, StatusUnhealthy:
		if svc.Digest == "" {
			return nil, fmt.Errorf("service %s cannot be activated: its bundle was not registered (status %s; see state.errorDetails): %w", svc.ID, svc.Status, ErrFailedPrecondition)
		}
	default:
		return nil, fmt.Errorf("service %s cannot be activated while %s: wait for status Ready: %w", svc.ID, svc.Status, ErrFailedPrecondition)
	}
	if err := acceptanceComplete(svc.Accepted, wantGrants); err != nil {
		return nil, fmt.Errorf("cannot activate %s: %w", svc.ID, err)
	}
	op := m.newOperation(svc, OpActivate, by, OperationParams{Phase: PhaseInstalling}, "render", "compatibility", "prechecks", "apply")
	op.ToVersion = svc.Version
	svc.LifecycleState = StateActive
	svc.Status = StatusBusy
	svc.Phase = PhaseInstalling
	svc.ErrorDetails = nil
	return op, nil
}

// Delete starts deletion: phase Deleting, status Busy, lifecycle state
// decommissioned. With force, target cleanup failures are recorded as
// orphans instead of blocking. A force delete may take over a running
// (non-forced) deletion.
func (m *Manager) Delete(ctx context.Context, id string, force bool, by string) (*Service, error) {
	var op *Operation
	var takeover string
	svc, err := m.mutate(ctx, id, func(tx Tx, svc *Service) error {
		op, takeover = nil, ""
		if svc.LifecycleState == StateDecommissioned {
			if !force {
				return nil // deleting twice is idempotent
			}
			running, err := tx.Operation(svc.ID, svc.ActiveOperation)
			if err == nil && running.Type == OpDelete && !running.Params.Force {
				running.Params.Force = true
				takeover = running.ID
				return tx.PutOperation(running)
			}
			return nil
		}
		if svc.ActiveOperation != "" && !force {
			return fmt.Errorf("service %s: a %s operation is in progress; wait, or delete with forceDelete=true: %w", id, svc.Progress.typeOr("previous"), ErrConflict)
		}
		if svc.ActiveOperation != "" {
			// Force: the running operation is abandoned.
			if running, err := tx.Operation(svc.ID, svc.ActiveOperation); err == nil && !running.Done() {
				running.Outcome = OutcomeFailed
				running.FinishedAt = m.now()
				if err := tx.PutOperation(running); err != nil {
					return err
				}
			}
		}
		op = m.newOperation(svc, OpDelete, by, OperationParams{Force: force, Phase: PhaseDeleting}, "remove-resources", "remove-service")
		op.FromVersion = svc.Version
		svc.LifecycleState = StateDecommissioned
		svc.Phase = PhaseDeleting
		svc.Status = StatusBusy
		svc.ActiveOperation = op.ID
		svc.Maintenance = false
		svc.Progress = &Progress{OperationID: op.ID, Type: op.Type, Step: op.Steps[0].Name, Percent: -1}
		return tx.PutOperation(op)
	})
	if err != nil {
		return nil, err
	}
	if op != nil {
		m.cancelRunning(id)
		m.enqueue(ctx, op)
	}
	if takeover != "" {
		m.cancelRunning(id)
		m.enqueueKey(id + "|" + takeover)
	}
	return svc, nil
}

// History lists a service's operations, oldest first, and names the last
// known good version. It answers for deleted services too.
func (m *Manager) History(ctx context.Context, id string) ([]*Operation, string, error) {
	ops, err := m.repo.Operations(ctx, id)
	if err != nil {
		return nil, "", err
	}
	svc, err := m.repo.Service(ctx, id)
	if errors.Is(err, ErrNotFound) {
		if len(ops) == 0 {
			return nil, "", err
		}
		return ops, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return ops, svc.LastKnownGood, nil
}
