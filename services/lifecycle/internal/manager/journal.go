package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// This file is the engine's Host: it loads operations from the store,
// journals their steps on the operation and the service's progress, runs
// each step through the operation's definition and closes operations.

func (m *core) newOperation(svc *lifecycle.Service, typ, by string, params lifecycle.OperationParams, steps ...string) *lifecycle.Operation {
	op := &lifecycle.Operation{
		ID: m.newOperationID(), ServiceID: svc.ID, ServiceName: svc.Name, Type: typ,
		FromVersion: svc.Version, Outcome: lifecycle.OutcomePending, RequestedBy: by, StartedAt: m.now(), Params: params,
	}
	for _, s := range steps {
		op.Steps = append(op.Steps, lifecycle.Step{Name: s, Status: lifecycle.StepPending})
	}
	return op
}

// recordInstant adds a finished, step-less operation to the history (pause,
// resume, deactivate happen inside the request's own transaction).
func (m *core) recordInstant(svc *lifecycle.Service, typ, by string) {
	svc.PendingHistory = append(svc.PendingHistory, &lifecycle.Operation{
		ID: m.newOperationID(), ServiceID: svc.ID, ServiceName: svc.Name, Type: typ,
		FromVersion: svc.Version, ToVersion: svc.Version, Outcome: lifecycle.OutcomeSucceeded, RequestedBy: by,
		StartedAt: m.now(), FinishedAt: m.now(),
	})
}

// enqueue queues op for a worker; the request in ctx is the one whose
// trace the operation's run continues.
func (m *core) enqueue(ctx context.Context, op *lifecycle.Operation) {
	k := engine.Key{Service: op.ServiceID, Operation: op.ID}
	m.cfg.Observer.OperationQueued(ctx, k.String())
	m.engine.Enqueue(k)
}

// run is one execution of an operation; scratch holds what steps computed
// (recomputed after a restart).
type run struct {
	op *lifecycle.Operation

	svc     *lifecycle.Service
	scratch map[string]any
}

// cache is the run's scratch, made on first use.
func (r *run) cache() map[string]any {
	if r.scratch == nil {
		r.scratch = map[string]any{}
	}
	return r.scratch
}

func (r *run) Kind() string          { return r.op.Type }
func (r *run) Runnable() bool        { return !r.op.Done() && r.op.Outcome != lifecycle.OutcomeStuck }
func (r *run) Steps() int            { return len(r.op.Steps) }
func (r *run) StepName(i int) string { return r.op.Steps[i].Name }
func (r *run) Outcome() string       { return r.op.Outcome }
func (r *run) StepDone(i int) bool {
	return r.op.Steps[i].Status == lifecycle.StepSucceeded || r.op.Steps[i].Status == lifecycle.StepSkipped
}

// retryable: a peer or target that is down, unless the step said the
// failure is final.
func retryable(err error) bool {
	var b *lifecycle.BlockedError
	return !errors.As(err, &b) && transient(err)
}

// transient reports errors worth retrying: a peer or target that is down.
func transient(err error) bool {
	if errors.Is(err, lifecycle.ErrUnavailable) || errors.Is(err, target.ErrUnreachable) {
		return true
	}
	if st, ok := status.FromError(errors.Unwrap(err)); ok && st.Code() == codes.Unavailable {
		return true
	}
	return false
}

// journal implements engine.Host over the manager's store.
type journal struct{ m *core }

func (j journal) Load(ctx context.Context, k engine.Key) (*run, error) {
	op, err := j.m.Repo.Operation(ctx, k.Service, k.Operation)
	if err != nil {
		return nil, err
	}
	return &run{op: op}, nil
}

func (j journal) Unfinished(ctx context.Context) ([]engine.Key, error) {
	ops, err := j.m.Repo.UnfinishedOperations(ctx)
	if err != nil {
		return nil, err
	}
	keys := make([]engine.Key, 0, len(ops))
	for _, op := range ops {
		if op.Outcome == lifecycle.OutcomeStuck {
			continue // waits for a rollback or a force delete
		}
		j.m.Log.Debug("unfinished operation", "service", op.ServiceID, "operation", op.ID, "type", op.Type)
		keys = append(keys, engine.Key{Service: op.ServiceID, Operation: op.ID})
	}
	return keys, nil
}

// Active lists the operations the services in the view say are running:
// the engine's frequent takeover sweep reads memory, not the journal.
func (j journal) Active(ctx context.Context) ([]engine.Key, error) {
	var keys []engine.Key
	for _, svc := range j.m.Repo.Services(ctx) {
		if svc.ActiveOperation != "" {
			keys = append(keys, engine.Key{Service: svc.ID, Operation: svc.ActiveOperation})
		}
	}
	return keys, nil
}

func (j journal) StepRunning(ctx context.Context, r *run, i int) (time.Time, error) {
	if err := j.m.saveStep(ctx, r, i, lifecycle.StepRunning, ""); err != nil {
		return time.Time{}, err
	}
	return r.op.Steps[i].StartedAt, nil
}

// Run reads the service afresh and runs the operation's step i.
func (j journal) Run(ctx context.Context, r *run, i int) error {
	svc, err := j.m.Repo.Service(ctx, r.op.ServiceID)
	// A delete's later steps run once the record may be gone.
	goneMidDelete := errors.Is(err, lifecycle.ErrNotFound) && r.op.Type == lifecycle.OpDelete && i > 0
	if err != nil && !goneMidDelete {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, fmt.Errorf("service vanished: %w", err))
	}
	r.svc = svc
	def, ok := operations[r.op.Type]
	if !ok {
		return fmt.Errorf("operation type %q has no steps", r.op.Type)
	}
	return def.run(ctx, j.m, r, r.op.Steps[i].Name)
}

func (j journal) StepSucceeded(ctx context.Context, r *run, i int) error {
	return j.m.saveStep(ctx, r, i, lifecycle.StepSucceeded, "")
}

func (j journal) Retrying(ctx context.Context, r *run, i, attempt int, cause error) {
	op := r.op
	op.Attempts = attempt
	j.m.Log.Warn("step failed; retrying", "service", op.ServiceID, "operation", op.ID, "step", op.Steps[i].Name, "attempt", attempt, "error", cause)
	_ = j.m.noteRetry(ctx, r, op.Steps[i].Name, cause)
}

func (j journal) Failed(ctx context.Context, r *run, i int, cause error, stuck bool) {
	j.m.fail(ctx, r, i, cause, stuck)
}

func (j journal) Succeeded(ctx context.Context, r *run) { j.m.finish(ctx, r) }

func (m *core) saveStep(ctx context.Context, r *run, i int, st, msg string) error {
	op := r.op
	now := m.now()
	op.Steps[i].Status = st
	op.Steps[i].Message = msg
	switch st {
	case lifecycle.StepRunning:
		if op.Steps[i].StartedAt.IsZero() {
			op.Steps[i].StartedAt = now
		}
		op.Outcome = lifecycle.OutcomeRunning
	case lifecycle.StepSucceeded, lifecycle.StepFailed:
		op.Steps[i].FinishedAt = now
		op.Attempts = 0
	}
	return m.putOperation(ctx, op, now, func(svc *lifecycle.Service) bool {
		if svc.ActiveOperation != op.ID {
			return false
		}
		svc.Progress = &lifecycle.Progress{OperationID: op.ID, Type: op.Type, Step: op.Steps[i].Name, Message: msg, Percent: progressPercent(op, i, st)}
		return true
	})
}

func progressPercent(op *lifecycle.Operation, i int, st string) int {
	done := i
	if st == lifecycle.StepSucceeded {
		done++
	}
	return done * 100 / len(op.Steps)
}

// noteRetry shows a retried step's reason in the service's state.
func (m *core) noteRetry(ctx context.Context, r *run, step string, cause error) error {
	_, err := m.Mutate(ctx, r.op.ServiceID, func(_ lifecycle.Tx, svc *lifecycle.Service) error {
		if svc.Progress != nil && svc.Progress.OperationID == r.op.ID {
			svc.Progress.Message = fmt.Sprintf("retrying %s: %v", step, cause)
		}
		return nil
	})
	return err
}

// closeOperation writes a finished (or stuck) operation and lets edit
// update its service in the same transaction; a service already gone is
// fine (a delete's last step removes it).
func (m *core) closeOperation(ctx context.Context, op *lifecycle.Operation, edit func(svc *lifecycle.Service)) error {
	return m.putOperation(ctx, op, m.now(), func(svc *lifecycle.Service) bool {
		edit(svc)
		return true
	})
}

// putOperation writes op and, in the same transaction, its service as
// edit leaves it (stamped now); edit returns false to leave the service
// unwritten. A service already gone is fine (a delete's last step removes
// it).
func (m *core) putOperation(ctx context.Context, op *lifecycle.Operation, now time.Time, edit func(svc *lifecycle.Service) bool) error {
	return m.Update(ctx, func(tx lifecycle.Tx) error {
		if err := tx.PutOperation(op); err != nil {
			return err
		}
		svc, err := tx.Service(op.ServiceID)
		if errors.Is(err, lifecycle.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if !edit(svc) {
			return nil
		}
		svc.UpdatedAt = now
		return tx.PutService(svc)
	})
}

// fail ends an operation whose step i failed (or is stuck: it exceeded
// its time bound and waits for a rollback or a force delete).
func (m *core) fail(ctx context.Context, r *run, i int, cause error, stuck bool) {
	op := r.op
	outcome := lifecycle.OutcomeFailed
	if stuck {
		outcome = lifecycle.OutcomeStuck
	}
	op.Steps[i].Status = lifecycle.StepFailed
	op.Steps[i].Message = cause.Error()
	op.Steps[i].FinishedAt = m.now()
	for j := i + 1; j < len(op.Steps); j++ {
		op.Steps[j].Status = lifecycle.StepSkipped
	}
	op.Outcome = outcome
	if outcome != lifecycle.OutcomeStuck {
		op.FinishedAt = m.now()
	}
	m.Log.Warn("operation failed", "service", op.ServiceID, "operation", op.ID, "type", op.Type, "step", op.Steps[i].Name, "outcome", outcome, "error", cause)
	errType := lifecycle.ErrTypeInstall
	var details []lifecycle.ErrorDetail
	var b *lifecycle.BlockedError
	if errors.As(cause, &b) {
		errType, details = b.ErrType, b.Details
	}
	err := m.closeOperation(ctx, op, func(svc *lifecycle.Service) {
		if svc.ActiveOperation == op.ID && outcome != lifecycle.OutcomeStuck {
			svc.ActiveOperation = ""
		}
		svc.ErrorDetails = append(lifecycle.WithoutType(svc.ErrorDetails, errType), lifecycle.ErrorDetail{Type: errType, Severity: lifecycle.SeverityError,
			Message: fmt.Sprintf("%s failed at step %s: %v", op.Type, op.Steps[i].Name, cause)})
		svc.ErrorDetails = append(svc.ErrorDetails, details...)
		if outcome == lifecycle.OutcomeStuck {
			svc.ErrorDetails = append(svc.ErrorDetails, lifecycle.ErrorDetail{Type: errType, Severity: lifecycle.SeverityError,
				Message: fmt.Sprintf("%s is stuck at step %s; recover with POST /rollback or DELETE ?forceDelete=true", op.Type, op.Steps[i].Name)})
		}
		if svc.Progress == nil || svc.Progress.OperationID != op.ID {
			svc.Progress = &lifecycle.Progress{OperationID: op.ID, Type: op.Type}
		}
		// state.operation says how the operation ended and where, not the
		// last progress message of the step that failed.
		svc.Progress.Outcome = outcome
		svc.Progress.Step = op.Steps[i].Name
		svc.Progress.Message = fmt.Sprintf("%s at step %s: %v", strings.ToLower(outcome), op.Steps[i].Name, cause)
		svc.Progress.Percent = max(svc.Progress.Percent, 0)
		if def, ok := operations[op.Type]; ok {
			def.onFailure(svc, op, outcome)
		}
		clearPhase(svc)
	})
	if err != nil {
		m.Log.Error("record failed operation", "operation", op.ID, "error", err)
	}
	m.afterFailure(ctx, op, outcome)
}

// clearPhase: phase names the stage of the running operation; once none
// runs it is empty (state.operation says how the last one ended). A
// stuck operation still holds the service, so its phase stays.
func clearPhase(svc *lifecycle.Service) {
	if svc.ActiveOperation == "" {
		svc.Phase = ""
	}
}

// finish records a successful operation.
func (m *core) finish(ctx context.Context, r *run) {
	op := r.op
	op.Outcome = lifecycle.OutcomeSucceeded
	op.FinishedAt = m.now()
	err := m.closeOperation(ctx, op, func(svc *lifecycle.Service) {
		if svc.ActiveOperation == op.ID {
			svc.ActiveOperation = ""
		}
		if svc.Progress != nil && svc.Progress.OperationID == op.ID {
			svc.Progress.Percent = 100
			svc.Progress.Message = "done"
			svc.Progress.Outcome = lifecycle.OutcomeSucceeded
		}
		clearPhase(svc)
	})
	if err != nil {
		m.Log.Error("record finished operation", "operation", op.ID, "error", err)
	}
	m.Log.Info("operation succeeded", "service", op.ServiceID, "operation", op.ID, "type", op.Type)
	m.queueReconcile(op.ServiceID)
}
