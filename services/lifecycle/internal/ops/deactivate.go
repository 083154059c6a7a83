package ops

import (
	"context"
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// Deactivation: PATCH lifecycleState active -> inactive. api.md: an
// inactive service's CRs are not applied, and phase Uninstalling is
// "service being deactivated". The service is inactive from the request
// on (the controllers stop reconciling it at once); the operation removes
// what it created from every target, honouring finalizers and ownership
// exactly as a delete does: a resource with the cleanup finalizer is
// deleted on its target, one without (adopted: it existed before the
// service) is released and left intact. Activation later re-applies them.
var deactivateOp = operation{
	typ: lifecycle.OpDeactivate,
	steps: []step{
		{"remove-resources", deactivateResources},
	},
	onSuccess: func(svc *lifecycle.Service, _ *lifecycle.Operation) {
		svc.Status = lifecycle.StatusReady
	},
	onFailure: func(svc *lifecycle.Service, _ *lifecycle.Operation, _ string) {
		// Still inactive; what is left is in state.resources and
		// errorDetails: activate again (re-applies) or delete.
		svc.Status = lifecycle.StatusUnhealthy
	},
}

// startDeactivation records a deactivation on svc (inside the request's
// transaction).
func startDeactivation(d *Deps, svc *lifecycle.Service, by string) *lifecycle.Operation {
	op := deactivateOp.start(d, svc, by, lifecycle.OperationParams{Phase: lifecycle.PhaseUninstalling})
	op.ToVersion = svc.Version
	svc.LifecycleState = lifecycle.StateInactive
	svc.Status = lifecycle.StatusBusy
	svc.Phase = lifecycle.PhaseUninstalling
	return op
}

// deactivateResources removes every resource of the service from its
// target and its record, then what the service still owns on a target
// without a record. A target that cannot be reached is retried until the
// step's time bound.
func deactivateResources(ctx context.Context, d *Deps, r *run) error {
	res, err := d.Repo.Resources(ctx, r.op.ServiceID)
	if err != nil {
		return err
	}
	if err := steps.RemoveResources(ctx, d.Ports.Remove(), res, false, nil); err != nil {
		return err
	}
	left, err := steps.SweepOrphans(ctx, d.Ports.Remove(), r.op.ServiceID, nil)
	switch {
	case err != nil:
		return fmt.Errorf("list the service's target resources: %w: %w", err, lifecycle.ErrUnavailable)
	case len(left) > 0:
		return fmt.Errorf("%d target resource(s) without a record could not be removed (retrying): %s: %w", len(left), left[0].Message, lifecycle.ErrUnavailable)
	}
	return nil
}
