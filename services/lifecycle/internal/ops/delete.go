package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// Delete starts deletion: phase Deleting, status Busy, lifecycle state
// decommissioned. With force, target cleanup failures are recorded as
// orphans instead of blocking. A force delete may take over a running
// (non-forced) deletion.
func (r *Runner) Delete(ctx context.Context, id string, force bool, by string) (*lifecycle.Service, error) {
	var op *lifecycle.Operation
	var takeover string
	svc, err := r.d.Writer.Mutate(ctx, id, func(tx lifecycle.Tx, svc *lifecycle.Service) error {
		op, takeover = nil, ""
		if svc.LifecycleState == lifecycle.StateDecommissioned {
			if !force {
				return nil // deleting twice is idempotent
			}
			running, err := tx.Operation(svc.ID, svc.ActiveOperation)
			if err == nil && running.Type == lifecycle.OpDelete && !running.Params.Force {
				running.Params.Force = true
				takeover = running.ID
				return tx.PutOperation(running)
			}
			return nil
		}
		if svc.ActiveOperation != "" && !force {
			return fmt.Errorf("service %s: a %s operation is in progress; wait, or delete with forceDelete=true: %w", id, svc.Progress.TypeOr("previous"), lifecycle.ErrConflict)
		}
		if svc.ActiveOperation != "" {
			// Force: the running operation is abandoned.
			if running, err := tx.Operation(svc.ID, svc.ActiveOperation); err == nil && !running.Done() {
				running.Outcome = lifecycle.OutcomeFailed
				running.FinishedAt = r.d.Now()
				if err := tx.PutOperation(running); err != nil {
					return err
				}
			}
		}
		op = deleteOp.start(&r.d, svc, by, lifecycle.OperationParams{Force: force, Phase: lifecycle.PhaseDeleting})
		svc.LifecycleState = lifecycle.StateDecommissioned
		svc.Phase = lifecycle.PhaseDeleting
		svc.Status = lifecycle.StatusBusy
		svc.Maintenance = false
		running(svc, op)
		return tx.PutOperation(op)
	})
	if err != nil {
		return nil, err
	}
	if op != nil {
		r.engine.Cancel(id)
		r.enqueue(ctx, op)
	}
	if takeover != "" {
		r.engine.Cancel(id)
		r.engine.Enqueue(engine.Key{Service: id, Operation: takeover})
	}
	return svc, nil
}

// Delete: clean up (or release) every resource on its target, then remove
// the record.
var deleteOp = operation{
	typ: lifecycle.OpDelete,
	steps: []step{
		{"remove-resources", deleteResources},
		{"remove-service", deleteService},
	},
	onFailure: func(svc *lifecycle.Service, _ *lifecycle.Operation, _ string) {
		svc.Status = lifecycle.StatusUnhealthy
	},
}

// deleteResources removes (or with force, releases) every resource, and
// sweeps what the service still owns on a target without a record.
func deleteResources(ctx context.Context, d *Deps, r *run) error {
	res, err := d.Repo.Resources(ctx, r.op.ServiceID)
	if err != nil {
		return err
	}
	var orphans []lifecycle.Orphan
	if err := steps.RemoveResources(ctx, d.Ports.Remove(), res, r.op.Params.Force, &orphans); err != nil {
		return err
	}
	// Anything the service still owns on a target without a record
	// goes too.
	// (What a force delete could not reach is listed once.)
	listed := make([]*lifecycle.Resource, len(orphans))
	for i, o := range orphans {
		listed[i] = &lifecycle.Resource{Target: o.Target}
	}
	left, err := steps.SweepOrphans(ctx, d.Ports.Remove(), r.op.ServiceID, listed)
	switch {
	case err != nil && !r.op.Params.Force:
		return fmt.Errorf("list the service's target resources: %w: %w", err, lifecycle.ErrUnavailable)
	case len(left) > 0 && !r.op.Params.Force:
		return fmt.Errorf("%d target resource(s) without a record could not be removed (retrying): %s: %w", len(left), left[0].Message, lifecycle.ErrUnavailable)
	}
	orphans = append(orphans, left...)
	if len(orphans) > 0 {
		r.op.Orphans = append(r.op.Orphans, orphans...)
		for _, o := range orphans {
			d.Log.Warn("force delete left a target resource behind; audit and clean it up manually",
				"service", r.op.ServiceID, "kind", o.Kind, "name", o.Name, "target", o.Target.String(), "reason", o.Message)
		}
		return d.Writer.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutOperation(r.op) })
	}
	return nil
}

// deleteService removes the record, after the records a force delete left.
func deleteService(ctx context.Context, d *Deps, r *run) error {
	// Records a force delete left are removed in chunks first, so the
	// last transaction stays below the store's size limit.
	left, err := d.Repo.Resources(ctx, r.op.ServiceID)
	if err != nil {
		return err
	}
	if err := steps.Chunked(ctx, d.Ports.Records(), len(left), func(tx lifecycle.Tx, i int) error {
		return tx.DeleteResource(left[i].ServiceID, left[i].ID)
	}); err != nil {
		return err
	}
	return d.Writer.Update(ctx, func(tx lifecycle.Tx) error {
		if _, err := tx.Service(r.op.ServiceID); errors.Is(err, lifecycle.ErrNotFound) {
			return nil
		}
		return tx.DeleteService(r.op.ServiceID)
	})
}
