package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

func (m *Manager) newOperation(svc *Service, typ, by string, params OperationParams, steps ...string) *Operation {
	op := &Operation{
		ID: m.newOperationID(), ServiceID: svc.ID, ServiceName: svc.Name, Type: typ,
		FromVersion: svc.Version, Outcome: OutcomePending, RequestedBy: by, StartedAt: m.now(), Params: params,
	}
	for _, s := range steps {
		op.Steps = append(op.Steps, Step{Name: s, Status: StepPending})
	}
	return op
}

// recordInstant adds a finished, step-less operation to the history (pause,
// resume, deactivate happen inside the request's own transaction).
func (m *Manager) recordInstant(svc *Service, typ, by string) {
	svc.pendingHistory = append(svc.pendingHistory, &Operation{
		ID: m.newOperationID(), ServiceID: svc.ID, ServiceName: svc.Name, Type: typ,
		FromVersion: svc.Version, ToVersion: svc.Version, Outcome: OutcomeSucceeded, RequestedBy: by,
		StartedAt: m.now(), FinishedAt: m.now(),
	})
}

func (m *Manager) enqueue(ctx context.Context, op *Operation) {
	key := op.ServiceID + "|" + op.ID
	m.cfg.Observer.OperationQueued(ctx, key)
	m.enqueueKey(key)
}

func (m *Manager) enqueueKey(key string) {
	select {
	case m.queue <- key:
	default:
		// The queue is full: the operation stays recorded as unfinished
		// and the next sweep picks it up.
		m.overflowed.Store(true)
		m.log.Warn("operation queue full; the sweep will pick the operation up", "operation", key)
	}
}

// worker executes queued operations.
func (m *Manager) worker(ctx context.Context) {
	sweep := time.NewTicker(5 * m.cfg.ReconcileInterval)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case key := <-m.queue:
			m.execute(ctx, key)
		case <-sweep.C:
			// Scanning every operation is only needed when one could not
			// be queued.
			if !m.overflowed.Swap(false) {
				continue
			}
			ops, err := m.repo.UnfinishedOperations(ctx)
			if err != nil {
				continue
			}
			for _, op := range ops {
				m.mu.Lock()
				busy := m.running[op.ServiceID+"|"+op.ID]
				m.mu.Unlock()
				if !busy && op.Outcome != OutcomeStuck {
					m.enqueue(ctx, op)
				}
			}
		}
	}
}

// cancelRunning stops the operation running on a service, if any (a force
// delete takes over).
func (m *Manager) cancelRunning(serviceID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.cancels[serviceID]; ok {
		c()
	}
}

// execute runs one operation to its end, resuming after its last
// succeeded step.
func (m *Manager) execute(parent context.Context, key string) {
	serviceID, opID, _ := strings.Cut(key, "|")
	m.mu.Lock()
	if m.running[key] {
		m.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(parent)
	m.running[key] = true
	if m.cancels == nil {
		m.cancels = map[string]context.CancelFunc{}
	}
	m.cancels[serviceID] = cancel
	m.mu.Unlock()
	defer func() {
		cancel()
		m.mu.Lock()
		delete(m.running, key)
		delete(m.cancels, serviceID)
		m.mu.Unlock()
	}()

	op, err := m.repo.Operation(ctx, serviceID, opID)
	if err != nil {
		m.log.Error("load operation", "operation", key, "error", err)
		return
	}
	if op.Done() || op.Outcome == OutcomeStuck {
		return
	}
	run := &run{m: m, op: op}
	ctx, observed := m.cfg.Observer.OperationStarted(ctx, key, op.Type)
	outcome := OutcomeInterrupted
	defer func() { observed(outcome) }()
	for i := range op.Steps {
		if op.Steps[i].Status == StepSucceeded || op.Steps[i].Status == StepSkipped {
			continue
		}
		stepCtx, stepDone := m.cfg.Observer.StepStarted(ctx, op.Type, op.Steps[i].Name)
		err := run.step(stepCtx, i)
		stepDone(err)
		if err != nil {
			if ctx.Err() != nil && parent.Err() == nil {
				// Cancelled by a takeover (force delete): nothing to record.
				return
			}
			if parent.Err() != nil {
				return // shutting down: the step resumes on restart
			}
			m.fail(context.WithoutCancel(ctx), run, i, err)
			outcome = op.Outcome
			return
		}
	}
	m.finish(context.WithoutCancel(ctx), run)
	outcome = op.Outcome
}

// run is one execution of an operation; scratch holds what steps computed
// (recomputed after a restart).
type run struct {
	m  *Manager
	op *Operation

	svc     *Service
	scratch map[string]any
}

// errBlocked marks a step outcome that must not be retried: the operation
// fails and the service shows why.
type blockedError struct {
	errType string
	err     error
}

func (b *blockedError) Error() string { return b.err.Error() }
func (b *blockedError) Unwrap() error { return b.err }

func blocked(errType string, err error) error { return &blockedError{errType: errType, err: err} }

// stuckError marks a step that exceeded its time bound.
type stuckError struct{ err error }

func (s *stuckError) Error() string { return s.err.Error() }
func (s *stuckError) Unwrap() error { return s.err }

// transient reports errors worth retrying: a peer or target that is down.
func transient(err error) bool {
	if errors.Is(err, ErrUnavailable) || errors.Is(err, target.ErrUnreachable) {
		return true
	}
	if st, ok := status.FromError(errors.Unwrap(err)); ok && st.Code() == codes.Unavailable {
		return true
	}
	return false
}

func (m *Manager) stepTimeout(name string) time.Duration {
	if d, ok := m.cfg.StepTimeouts[name]; ok && d > 0 {
		return d
	}
	return m.cfg.StepTimeout
}

// step records step i as running, runs it (retrying transient failures
// until the step's time bound) and records the outcome.
func (r *run) step(ctx context.Context, i int) error {
	m, op := r.m, r.op
	name := op.Steps[i].Name
	if err := m.saveStep(ctx, r, i, StepRunning, ""); err != nil {
		return err
	}
	m.hold(ctx, op.Type, name, "before")
	started := op.Steps[i].StartedAt
	deadline := started.Add(m.stepTimeout(name))
	backoff := m.cfg.RetryBackoff
	for {
		svc, err := m.repo.Service(ctx, op.ServiceID)
		// A delete's later steps run once the record may be gone.
		goneMidDelete := errors.Is(err, ErrNotFound) && op.Type == OpDelete && i > 0
		if err != nil && !goneMidDelete {
			return blocked(ErrTypeInstall, fmt.Errorf("service vanished: %w", err))
		}
		r.svc = svc
		stepCtx, cancel := context.WithDeadline(ctx, deadline)
		err = m.runStep(stepCtx, r, name)
		timedOut := stepCtx.Err() == context.DeadlineExceeded
		cancel()
		if err == nil {
			m.hold(ctx, op.Type, name, "after")
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return m.saveStep(ctx, r, i, StepSucceeded, "")
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if timedOut || !m.now().Before(deadline) {
			return &stuckError{fmt.Errorf("step %s of %s exceeded its time bound of %s: %w", name, op.Type, m.stepTimeout(name), err)}
		}
		var b *blockedError
		if errors.As(err, &b) || !transient(err) {
			return err
		}
		op.Attempts++
		m.log.WarnContext(ctx, "step failed; retrying", "service", op.ServiceID, "operation", op.ID, "step", name, "attempt", op.Attempts, "error", err)
		_ = m.noteRetry(ctx, r, name, err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(backoff, time.Until(deadline)+time.Millisecond)):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (m *Manager) saveStep(ctx context.Context, r *run, i int, st, msg string) error {
	op := r.op
	now := m.now()
	op.Steps[i].Status = st
	op.Steps[i].Message = msg
	switch st {
	case StepRunning:
		if op.Steps[i].StartedAt.IsZero() {
			op.Steps[i].StartedAt = now
		}
		op.Outcome = OutcomeRunning
	case StepSucceeded, StepFailed:
		op.Steps[i].FinishedAt = now
		op.Attempts = 0
	}
	return m.update(ctx, func(tx Tx) error {
		if err := tx.PutOperation(op); err != nil {
			return err
		}
		svc, err := tx.Service(op.ServiceID)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if svc.ActiveOperation != op.ID {
			return nil
		}
		svc.Progress = &Progress{OperationID: op.ID, Type: op.Type, Step: op.Steps[i].Name, Message: msg, Percent: progressPercent(op, i, st)}
		svc.UpdatedAt = now
		return tx.PutService(svc)
	})
}

func progressPercent(op *Operation, i int, st string) int {
	done := i
	if st == StepSucceeded {
		done++
	}
	return done * 100 / len(op.Steps)
}

// noteRetry shows a retried step's reason in the service's state.
func (m *Manager) noteRetry(ctx context.Context, r *run, step string, cause error) error {
	_, err := m.mutate(ctx, r.op.ServiceID, func(_ Tx, svc *Service) error {
		if svc.Progress != nil && svc.Progress.OperationID == r.op.ID {
			svc.Progress.Message = fmt.Sprintf("retrying %s: %v", step, cause)
		}
		return nil
	})
	return err
}

// runStep dispatches to the operation type's step implementation.
func (m *Manager) runStep(ctx context.Context, r *run, name string) error {
	switch r.op.Type {
	case OpRegister:
		return m.registerStep(ctx, r, name)
	case OpActivate, OpConfigure:
		return m.installStep(ctx, r, name)
	case OpDelete:
		return m.deleteStep(ctx, r, name)
	case OpUpgrade:
		return m.upgradeStep(ctx, r, name)
	case OpRollback:
		return m.rollbackStep(ctx, r, name)
	}
	return fmt.Errorf("operation type %q has no steps", r.op.Type)
}

// fail ends an operation whose step i failed.
func (m *Manager) fail(ctx context.Context, r *run, i int, cause error) {
	op := r.op
	var stuck *stuckError
	outcome := OutcomeFailed
	if errors.As(cause, &stuck) {
		outcome = OutcomeStuck
	}
	op.Steps[i].Status = StepFailed
	op.Steps[i].Message = cause.Error()
	op.Steps[i].FinishedAt = m.now()
	for j := i + 1; j < len(op.Steps); j++ {
		op.Steps[j].Status = StepSkipped
	}
	op.Outcome = outcome
	if outcome != OutcomeStuck {
		op.FinishedAt = m.now()
	}
	m.log.WarnContext(ctx, "operation failed", "service", op.ServiceID, "operation", op.ID, "type", op.Type, "step", op.Steps[i].Name, "outcome", outcome, "error", cause)
	errType := ErrTypeInstall
	var b *blockedError
	if errors.As(cause, &b) {
		errType = b.errType
	}
	err := m.update(ctx, func(tx Tx) error {
		if err := tx.PutOperation(op); err != nil {
			return err
		}
		svc, err := tx.Service(op.ServiceID)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if svc.ActiveOperation == op.ID && outcome != OutcomeStuck {
			svc.ActiveOperation = ""
		}
		svc.ErrorDetails = append(withoutType(svc.ErrorDetails, errType), ErrorDetail{Type: errType, Severity: SeverityError,
			Message: fmt.Sprintf("%s failed at step %s: %v", op.Type, op.Steps[i].Name, cause)})
		if outcome == OutcomeStuck {
			svc.ErrorDetails = append(svc.ErrorDetails, ErrorDetail{Type: errType, Severity: SeverityError,
				Message: fmt.Sprintf("%s is stuck at step %s; recover with POST /rollback or DELETE ?forceDelete=true", op.Type, op.Steps[i].Name)})
		}
		m.onFailure(tx, svc, op, outcome)
		svc.UpdatedAt = m.now()
		return tx.PutService(svc)
	})
	if err != nil {
		m.log.Error("record failed operation", "operation", op.ID, "error", err)
	}
	m.afterFailure(ctx, op, outcome)
}

func withoutType(ds []ErrorDetail, t string) []ErrorDetail {
	out := ds[:0:0]
	for _, d := range ds {
		if d.Type != t {
			out = append(out, d)
		}
	}
	return out
}

// onFailure sets the service's status after a failed operation.
func (m *Manager) onFailure(_ Tx, svc *Service, op *Operation, outcome string) {
	switch op.Type {
	case OpRegister:
		svc.Status = StatusUnhealthy
	case OpActivate:
		// The activation did not happen: the service is inactive again.
		svc.LifecycleState = StateInactive
		svc.Status = StatusUnhealthy
	case OpConfigure:
		svc.Status = StatusUnhealthy
	case OpDelete:
		svc.Status = StatusUnhealthy
	case OpUpgrade:
		m.onUpgradeFailure(svc, op, outcome)
	case OpRollback:
		svc.Status = StatusUnhealthy
		svc.Maintenance = false
	}
}

// finish records a successful operation.
func (m *Manager) finish(ctx context.Context, r *run) {
	op := r.op
	op.Outcome = OutcomeSucceeded
	op.FinishedAt = m.now()
	err := m.update(ctx, func(tx Tx) error {
		if err := tx.PutOperation(op); err != nil {
			return err
		}
		svc, err := tx.Service(op.ServiceID)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if svc.ActiveOperation == op.ID {
			svc.ActiveOperation = ""
		}
		if svc.Progress != nil && svc.Progress.OperationID == op.ID {
			svc.Progress.Percent = 100
			svc.Progress.Message = "done"
		}
		svc.UpdatedAt = m.now()
		return tx.PutService(svc)
	})
	if err != nil {
		m.log.Error("record finished operation", "operation", op.ID, "error", err)
	}
	m.log.InfoContext(ctx, "operation succeeded", "service", op.ServiceID, "operation", op.ID, "type", op.Type)
	m.kickControllers()
	m.afterSuccess(ctx, op)
}
