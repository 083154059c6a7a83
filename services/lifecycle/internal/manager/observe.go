package manager

import (
	"context"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
)

// Observer is told what the lifecycle service does, for metrics and
// traces: the operations (queued, resumed, run, each step) and the
// controllers' reads of resources on their targets. internal/telemetry
// implements it. Implementations must be safe for concurrent use and fast:
// they run inline.
type Observer interface {
	// OperationQueued: an operation was queued by the request in ctx
	// (whose trace the operation's execution continues).
	OperationQueued(ctx context.Context, key string)
	// OperationResumed: an unfinished operation was found at start.
	OperationResumed(opType string)
	// OperationStarted: a worker begins (or resumes) running an
	// operation. done reports how the run ended: an Outcome, or
	// "interrupted" when shutdown or a takeover stopped it.
	OperationStarted(ctx context.Context, key, opType string) (_ context.Context, done func(outcome string))
	// StepStarted: one step of an operation begins; done reports its
	// error (nil: succeeded).
	StepStarted(ctx context.Context, opType, step string) (_ context.Context, done func(err error))
	// Reconciled: a controller read a resource of kind on target system
	// (err is the read's error; target.ErrNotFound means it must be
	// re-applied, not a failure).
	Reconciled(kind, system string, d time.Duration, err error)
}

// OutcomeInterrupted is the run outcome of an operation stopped by
// shutdown or a takeover; it resumes or is superseded.
const OutcomeInterrupted = engine.OutcomeInterrupted

type nopObserver struct{}

func (nopObserver) OperationQueued(context.Context, string) {}
func (nopObserver) OperationResumed(string)                 {}
func (nopObserver) OperationStarted(ctx context.Context, _, _ string) (context.Context, func(string)) {
	return ctx, func(string) {}
}
func (nopObserver) StepStarted(ctx context.Context, _, _ string) (context.Context, func(error)) {
	return ctx, func(error) {}
}
func (nopObserver) Reconciled(string, string, time.Duration, error) {}
