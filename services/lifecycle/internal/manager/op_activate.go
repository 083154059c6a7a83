package manager

import (
	"context"
	"fmt"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// Activation: PATCH lifecycleState inactive -> active, once the EULA,
// signatures and access grants are accepted.

// activateSteps, in order: render the bundle with the stored values and
// the inventory, evaluate compatibility, run the dynamic pre-checks, apply
// the resources on their targets.
var activateSteps = []string{"render", "compatibility", "prechecks", "apply"}

var activateOperation = operationDef{
	run: func(ctx context.Context, m *core, r *run, step string) error { return m.activateStep(ctx, r, step) },
	onFailure: func(svc *lifecycle.Service, _ *lifecycle.Operation, _ string) {
		// The activation did not happen: the service is inactive again.
		svc.LifecycleState = lifecycle.StateInactive
		svc.Status = lifecycle.StatusUnhealthy
	},
}

// startActivation records an activation on svc (inside the request's
// transaction).
func (m *core) startActivation(svc *lifecycle.Service, wantGrants map[string]any, by string) (*lifecycle.Operation, error) {
	switch svc.Status {
	case lifecycle.StatusReady, lifecycle.StatusUnresolved, lifecycle.StatusUnhealthy:
		if svc.Digest == "" {
			return nil, fmt.Errorf("service %s cannot be activated: its bundle was not registered (status %s; see state.errorDetails): %w", svc.ID, svc.Status, lifecycle.ErrFailedPrecondition)
		}
	default:
		return nil, fmt.Errorf("service %s cannot be activated while %s: wait for status Ready: %w", svc.ID, svc.Status, lifecycle.ErrFailedPrecondition)
	}
	if err := acceptanceComplete(svc.Accepted, wantGrants); err != nil {
		return nil, fmt.Errorf("cannot activate %s: %w", svc.ID, err)
	}
	if err := m.checkSignatures(svc); err != nil {
		return nil, err
	}
	op := m.newOperation(svc, lifecycle.OpActivate, by, lifecycle.OperationParams{Phase: lifecycle.PhaseInstalling}, activateSteps...)
	op.ToVersion = svc.Version
	svc.LifecycleState = lifecycle.StateActive
	svc.Status = lifecycle.StatusBusy
	svc.Phase = lifecycle.PhaseInstalling
	svc.ErrorDetails = nil
	return op, nil
}

// activateStep runs one step of an activation (and of a reconfiguration,
// which runs the same steps on an active service). Every step renders
// through the run's cache, so a restarted run renders once again.
func (m *core) activateStep(ctx context.Context, r *run, name string) error {
	b, err := steps.LoadBundle(m.Bundles, r.svc)
	if err != nil {
		return err
	}
	rend, err := steps.RenderFor(ctx, m.RenderPorts(), m.Store, r.cache(), r.svc, b)
	if err != nil {
		return err
	}
	switch name {
	case "render":
		return nil
	case "compatibility":
		return steps.CheckInstall(ctx, m.CheckPorts(), m.Store, r.svc, b, rend)
	case "prechecks":
		return steps.Prechecks(ctx, m.PrecheckPorts(), r.svc, b, rend, r.svc.Version)
	case "apply":
		return steps.ApplyRendered(ctx, m.ApplyPorts(), r.svc, rend, r.svc.Version)
	}
	return fmt.Errorf("%s has no step %q", r.op.Type, name)
}
