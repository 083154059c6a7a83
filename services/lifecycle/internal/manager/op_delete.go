package manager

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
func (m *Manager) Delete(ctx context.Context, id string, force bool, by string) (*lifecycle.Service, error) {
	var op *lifecycle.Operation
	var takeover string
	svc, err := m.Mutate(ctx, id, func(tx lifecycle.Tx, svc *lifecycle.Service) error {
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
				running.FinishedAt = m.now()
				if err := tx.PutOperation(running); err != nil {
					return err
				}
			}
		}
		op = m.newOperation(svc, lifecycle.OpDelete, by, lifecycle.OperationParams{Force: force, Phase: lifecycle.PhaseDeleting}, deleteSteps...)
		op.FromVersion = svc.Version
		svc.LifecycleState = lifecycle.StateDecommissioned
		svc.Phase = lifecycle.PhaseDeleting
		svc.Status = lifecycle.StatusBusy
		svc.ActiveOperation = op.ID
		svc.Maintenance = false
		svc.Progress = &lifecycle.Progress{OperationID: op.ID, Type: op.Type, Step: op.Steps[0].Name, Percent: -1}
		return tx.PutOperation(op)
	})
	if err != nil {
		return nil, err
	}
	if op != nil {
		m.engine.Cancel(id)
		m.enqueue(ctx, op)
	}
	if takeover != "" {
		m.engine.Cancel(id)
		m.engine.Enqueue(engine.Key{Service: id, Operation: takeover})
	}
	return svc, nil
}

// Delete steps, in order: clean up (or release) every resource on its
// target, then remove the record.
var deleteSteps = []string{"remove-resources", "remove-service"}

var deleteOperation = operationDef{
	run: func(ctx context.Context, m *core, r *run, step string) error { return m.deleteStep(ctx, r, step) },
	onFailure: func(svc *lifecycle.Service, _ *lifecycle.Operation, _ string) {
		svc.Status = lifecycle.StatusUnhealthy
	},
}

// deleteStep runs the steps of a delete operation.
func (m *core) deleteStep(ctx context.Context, r *run, name string) error {
	switch name {
	case "remove-resources":
		res, err := m.Repo.Resources(ctx, r.op.ServiceID)
		if err != nil {
			return err
		}
		var orphans []lifecycle.Orphan
		if err := steps.RemoveResources(ctx, m.RemovePorts(), res, r.op.Params.Force, &orphans); err != nil {
			return err
		}
		// Anything the service still owns on a target without a record
		// goes too.
		left, err := steps.SweepOrphans(ctx, m.RemovePorts(), r.op.ServiceID, nil)
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
				m.Log.Warn("force delete left a target resource behind; audit and clean it up manually",
					"service", r.op.ServiceID, "kind", o.Kind, "name", o.Name, "target", o.Target.String(), "reason", o.Message)
			}
			return m.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutOperation(r.op) })
		}
		return nil
	case "remove-service":
		// Records a force delete left are removed in chunks first, so the
		// last transaction stays below the store's size limit.
		left, err := m.Repo.Resources(ctx, r.op.ServiceID)
		if err != nil {
			return err
		}
		if err := steps.Chunked(ctx, m.RecordPorts(), len(left), func(tx lifecycle.Tx, i int) error {
			return tx.DeleteResource(left[i].ServiceID, left[i].ID)
		}); err != nil {
			return err
		}
		return m.Update(ctx, func(tx lifecycle.Tx) error {
			if _, err := tx.Service(r.op.ServiceID); errors.Is(err, lifecycle.ErrNotFound) {
				return nil
			}
			return tx.DeleteService(r.op.ServiceID)
		})
	}
	return fmt.Errorf("delete has no step %q", name)
}
