package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// This file is the engine's Host: it loads operations from the store,
// journals their steps on the operation and the service's progress (all
// through the one write path), runs each step from the operation's table
// and closes operations.

// retryable: a peer or target that is down, unless the step said the
// failure is final.
func retryable(err error) bool {
	var b *lifecycle.BlockedError
	return !errors.As(err, &b) && transient(err)
}

// transient reports errors worth retrying: a peer or target that is down
// (the adapters turn a gRPC Unavailable into these).
func transient(err error) bool {
	return errors.Is(err, lifecycle.ErrUnavailable) || errors.Is(err, target.ErrUnreachable)
}

// host implements engine.Host over the store, for the runner.
type host struct{ r *Runner }

func (h host) Load(ctx context.Context, k engine.Key) (*run, error) {
	op, err := h.r.d.Repo.Operation(ctx, k.Service, k.Operation)
	if err != nil {
		return nil, err
	}
	return &run{op: op}, nil
}

func (h host) Unfinished(ctx context.Context) ([]engine.Key, error) {
	ops, err := h.r.d.Repo.UnfinishedOperations(ctx)
	if err != nil {
		return nil, err
	}
	keys := make([]engine.Key, 0, len(ops))
	for _, op := range ops {
		if op.Outcome == lifecycle.OutcomeStuck {
			continue // waits for a rollback or a force delete
		}
		h.r.d.Log.Debug("unfinished operation", "service", op.ServiceID, "operation", op.ID, "type", op.Type)
		keys = append(keys, engine.Key{Service: op.ServiceID, Operation: op.ID})
	}
	return keys, nil
}

// Active lists the operations the services in the view say are running:
// the engine's frequent takeover sweep reads memory, not the journal.
func (h host) Active(ctx context.Context) ([]engine.Key, error) {
	var keys []engine.Key
	for _, svc := range h.r.d.Repo.Services(ctx) {
		if svc.ActiveOperation != "" {
			keys = append(keys, engine.Key{Service: svc.ID, Operation: svc.ActiveOperation})
		}
	}
	return keys, nil
}

func (h host) StepRunning(ctx context.Context, r *run, i int) (time.Time, error) {
	if err := h.saveStep(ctx, r, i, lifecycle.StepRunning, ""); err != nil {
		return time.Time{}, err
	}
	return r.op.Steps[i].StartedAt, nil
}

// Run reads the service afresh and runs the operation's step i.
func (h host) Run(ctx context.Context, r *run, i int) error {
	svc, err := h.r.d.Repo.Service(ctx, r.op.ServiceID)
	// A delete's later steps run once the record may be gone.
	goneMidDelete := errors.Is(err, lifecycle.ErrNotFound) && r.op.Type == lifecycle.OpDelete && i > 0
	if err != nil && !goneMidDelete {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, fmt.Errorf("service vanished: %w", err))
	}
	r.svc = svc
	_, st, err := lookup(r.op, i)
	if err != nil {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, err)
	}
	return st.run(ctx, &h.r.d, r)
}

func (h host) StepSucceeded(ctx context.Context, r *run, i int) error {
	return h.saveStep(ctx, r, i, lifecycle.StepSucceeded, "")
}

func (h host) Retrying(ctx context.Context, r *run, i, attempt int, cause error) {
	op := r.op
	op.Attempts = attempt
	h.r.d.Log.Warn("step failed; retrying", "service", op.ServiceID, "operation", op.ID, "step", op.Steps[i].Name, "attempt", attempt, "error", cause)
	_ = h.noteRetry(ctx, r, op.Steps[i].Name, cause)
}

func (h host) Failed(ctx context.Context, r *run, i int, cause error, stuck bool) {
	h.fail(ctx, r, i, cause, stuck)
}

func (h host) Succeeded(ctx context.Context, r *run) { h.finish(ctx, r) }

func (h host) saveStep(ctx context.Context, r *run, i int, st, msg string) error {
	op := r.op
	now := h.r.d.Now()
	op.Steps[i].Status = st
	// A step that succeeds may leave a message of its own (a rollout's
	// wave that failed and turned to the rollback).
	if msg != "" || st != lifecycle.StepSucceeded {
		op.Steps[i].Message = msg
	}
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
	return h.r.d.Writer.PutOperation(ctx, op, func(svc *lifecycle.Service) bool {
		if svc.ActiveOperation != op.ID {
			return false
		}
		svc.Progress = &lifecycle.Progress{OperationID: op.ID, Type: op.Type, Override: op.Override, Step: op.Steps[i].Name, Message: msg, Percent: progressPercent(op, i, st)}
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
func (h host) noteRetry(ctx context.Context, r *run, step string, cause error) error {
	_, err := h.r.d.Writer.Mutate(ctx, r.op.ServiceID, func(_ lifecycle.Tx, svc *lifecycle.Service) error {
		if svc.Progress != nil && svc.Progress.OperationID == r.op.ID {
			svc.Progress.Message = fmt.Sprintf("retrying %s: %v", step, cause)
		}
		return nil
	})
	return err
}

// fail ends an operation whose step i failed (or is stuck: it exceeded
// its time bound and waits for a rollback or a force delete).
func (h host) fail(ctx context.Context, r *run, i int, cause error, stuck bool) {
	op := r.op
	outcome := lifecycle.OutcomeFailed
	if stuck {
		outcome = lifecycle.OutcomeStuck
	}
	op.Steps[i].Status = lifecycle.StepFailed
	op.Steps[i].Message = cause.Error()
	op.Steps[i].FinishedAt = h.r.d.Now()
	for j := i + 1; j < len(op.Steps); j++ {
		op.Steps[j].Status = lifecycle.StepSkipped
	}
	op.Outcome = outcome
	if outcome != lifecycle.OutcomeStuck {
		op.FinishedAt = h.r.d.Now()
	}
	h.r.d.Log.Warn("operation failed", "service", op.ServiceID, "operation", op.ID, "type", op.Type, "step", op.Steps[i].Name, "outcome", outcome, "error", cause)
	errType := lifecycle.ErrTypeInstall
	var details []lifecycle.ErrorDetail
	var b *lifecycle.BlockedError
	if errors.As(cause, &b) {
		errType, details = b.ErrType, b.Details
	}
	// What the earlier steps noted stays next to the failure (before,
	// a block dropped the notes of its type: a hook's ERROR took the
	// compatibility step's WARNINGs with it).
	noted := op.Notes
	failure := []lifecycle.ErrorDetail{{Type: errType, Severity: lifecycle.SeverityError,
		Message: fmt.Sprintf("%s failed at step %s: %v", op.Type, op.Steps[i].Name, cause)}}
	failure = append(failure, details...)
	if outcome == lifecycle.OutcomeStuck {
		failure = append(failure, lifecycle.ErrorDetail{Type: errType, Severity: lifecycle.SeverityError,
			Message: fmt.Sprintf("%s is stuck at step %s; recover with POST /rollback or DELETE ?forceDelete=true", op.Type, op.Steps[i].Name)})
	}
	op.Notes = lifecycle.AddDetails(slices.Clone(noted), failure...)
	err := h.r.d.Writer.CloseOperation(ctx, op, func(svc *lifecycle.Service) {
		if svc.ActiveOperation == op.ID && outcome != lifecycle.OutcomeStuck {
			svc.ActiveOperation = ""
		}
		svc.ErrorDetails = lifecycle.AddDetails(lifecycle.WithoutType(svc.ErrorDetails, errType), op.Notes...)
		if svc.Progress == nil || svc.Progress.OperationID != op.ID {
			svc.Progress = &lifecycle.Progress{OperationID: op.ID, Type: op.Type, Override: op.Override}
		}
		// state.operation says how the operation ended and where, not the
		// last progress message of the step that failed.
		svc.Progress.Outcome = outcome
		svc.Progress.Step = op.Steps[i].Name
		svc.Progress.Message = fmt.Sprintf("%s at step %s: %v", strings.ToLower(outcome), op.Steps[i].Name, cause)
		svc.Progress.Percent = max(svc.Progress.Percent, 0)
		if def, ok := operationTypes()[op.Type]; ok && def.onFailure != nil {
			def.onFailure(svc, op, outcome)
		}
		clearPhase(svc)
	})
	if err != nil {
		h.r.d.Log.Error("record failed operation", "operation", op.ID, "error", err)
	}
	h.quarantineFailedAuto(ctx, op, cause)
	h.afterFailure(ctx, op, outcome)
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
func (h host) finish(ctx context.Context, r *run) {
	op := r.op
	op.Outcome = lifecycle.OutcomeSucceeded
	if op.Rollout != nil && op.Rollout.State == lifecycle.RolloutRolledBack {
		// A rollout that rolled itself back says so; only now, as it
		// closes: an operation journaled with an outcome is done, and one
		// killed before it closed would never resume.
		op.Outcome = lifecycle.OutcomeRolledBack
	}
	op.FinishedAt = h.r.d.Now()
	err := h.r.d.Writer.CloseOperation(ctx, op, func(svc *lifecycle.Service) {
		svc.ErrorDetails = lifecycle.AddDetails(svc.ErrorDetails, op.Notes...)
		if svc.ActiveOperation == op.ID {
			svc.ActiveOperation = ""
			if def, ok := operationTypes()[op.Type]; ok && def.onSuccess != nil {
				def.onSuccess(svc, op)
			}
		}
		if svc.Progress != nil && svc.Progress.OperationID == op.ID {
			svc.Progress.Percent = 100
			svc.Progress.Message = "done"
			svc.Progress.Outcome = lifecycle.OutcomeSucceeded
		}
		clearPhase(svc)
	})
	if err != nil {
		h.r.d.Log.Error("record finished operation", "operation", op.ID, "error", err)
	}
	h.r.d.Log.Info("operation succeeded", "service", op.ServiceID, "operation", op.ID, "type", op.Type)
}

// afterFailure starts an automatic rollback when the service asks for one.
func (h host) afterFailure(ctx context.Context, op *lifecycle.Operation, outcome string) {
	if op.Type != lifecycle.OpUpgrade || outcome != lifecycle.OutcomeFailed {
		return
	}
	svc, err := h.r.d.Repo.Service(ctx, op.ServiceID)
	if err != nil || !svc.AutoRollback || svc.PreviousVersion == nil || svc.Version != op.ToVersion {
		return
	}
	h.r.d.Log.Info("upgrade failed; rolling back automatically", "service", svc.ID, "to", svc.PreviousVersion.Version)
	if _, err := h.r.Rollback(ctx, svc.ID, "", "auto-rollback"); err != nil {
		h.r.d.Log.Error("automatic rollback", "service", svc.ID, "error", err)
		h.refusedRollback(ctx, op, svc.PreviousVersion.Version, err)
	}
}

// quarantineFailedAuto quarantines the version an automatic upgrade failed
// on (or is stuck at): automatic upgrades pick it again only once an
// administrator clears it (DELETE /v2/vcf-service-versions/{name}/{version}/quarantine).
func (h host) quarantineFailedAuto(ctx context.Context, op *lifecycle.Operation, cause error) {
	if (op.Type != lifecycle.OpUpgrade && op.Type != lifecycle.OpRollout) || !op.Params.Automatic || op.ToVersion == "" || op.ServiceName == "" {
		return
	}
	q := &lifecycle.Quarantine{At: h.r.d.Now(), By: op.RequestedBy,
		Reason: fmt.Sprintf("the automatic upgrade of service %s from %s failed: %v", op.ServiceID, op.FromVersion, cause)}
	if err := quarantine(ctx, h.r.d, op.ServiceName, op.ToVersion, q); err != nil {
		h.r.d.Log.Warn("quarantine the version an automatic upgrade failed on", "service", op.ServiceID, "version", op.ToVersion, "error", err)
	}
}

// refusedRollback shows a refused automatic rollback as an ERROR in the
// service's errorDetails and the failed upgrade's record (it used to be
// only logged).
func (h host) refusedRollback(ctx context.Context, op *lifecycle.Operation, to string, cause error) {
	d := lifecycle.ErrorDetail{Type: lifecycle.ErrTypeInstall, Severity: lifecycle.SeverityError,
		Message: fmt.Sprintf("the automatic rollback to %s was refused: %v", to, cause)}
	op.Notes = lifecycle.AddDetails(op.Notes, d)
	err := h.r.d.Writer.PutOperation(ctx, op, func(svc *lifecycle.Service) bool {
		svc.ErrorDetails = lifecycle.AddDetails(svc.ErrorDetails, d)
		return true
	})
	if err != nil {
		h.r.d.Log.Error("record the refused automatic rollback", "service", op.ServiceID, "error", err)
	}
}

// operationTypes maps each operation type to its table.
func operationTypes() map[string]*operation {
	return map[string]*operation{
		lifecycle.OpRegister:   &registerOp,
		lifecycle.OpActivate:   &activateOp,
		lifecycle.OpDeactivate: &deactivateOp,
		lifecycle.OpConfigure:  &reconfigureOp,
		lifecycle.OpUpgrade:    &upgradeOp,
		lifecycle.OpRollback:   &rollbackOp,
		lifecycle.OpDelete:     &deleteOp,
		lifecycle.OpRollout:    &rolloutOp,
	}
}

// lookup finds the step an operation journaled by name; a journal written
// by another version of the Service Manager may name one this one lacks.
func lookup(op *lifecycle.Operation, i int) (*operation, step, error) {
	def, ok := operationTypes()[op.Type]
	if !ok {
		return nil, step{}, fmt.Errorf("operation %s has unknown type %q", op.ID, op.Type)
	}
	name := op.Steps[i].Name
	for _, s := range def.steps {
		if s.name == name {
			return def, s, nil
		}
	}
	if def.dynamic != nil {
		if s, ok := def.dynamic(name); ok {
			return def, s, nil
		}
	}
	return def, step{}, fmt.Errorf("operation %s (%s) journaled step %q, which this version does not have (steps: %v)", op.ID, op.Type, name, def.names())
}

// StepWaiting journals a step that waits (a rollout's gate): not running,
// its time bound to start again with the next run, and why it waits in
// the service's progress.
func (h host) StepWaiting(ctx context.Context, r *run, i int, w *engine.WaitError) {
	op := r.op
	op.Steps[i].Status = lifecycle.StepPending
	op.Steps[i].StartedAt = time.Time{}
	op.Steps[i].Message = w.Reason
	err := h.r.d.Writer.PutOperation(ctx, op, func(svc *lifecycle.Service) bool {
		if svc.ActiveOperation != op.ID {
			return false
		}
		svc.Progress = &lifecycle.Progress{OperationID: op.ID, Type: op.Type, Override: op.Override, Step: op.Steps[i].Name, Message: w.Reason, Percent: progressPercent(op, i, lifecycle.StepPending)}
		return true
	})
	if err != nil {
		h.r.d.Log.Warn("journal a waiting step", "operation", op.ID, "step", op.Steps[i].Name, "error", err)
	}
}
