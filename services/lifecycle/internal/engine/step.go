package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/platform/safe"
)

// stuckError marks a step that exceeded its time bound.
type stuckError struct{ err error }

func (s *stuckError) Error() string { return s.err.Error() }
func (s *stuckError) Unwrap() error { return s.err }

// step journals step i as running and runs it once. A transient failure
// before the step's time bound is journaled (Retrying) and returned as a
// retryLater: the worker is let go for the backoff and the operation
// queued again after it, so operations retrying against a target that is
// down do not starve the others of workers.
func (e *Engine[J]) step(ctx context.Context, k Key, j J, i int) error {
	name := j.StepName(i)
	started, attempt, err := e.stepStarted(ctx, k, j, i)
	if err != nil {
		return err
	}
	e.cfg.Failpoints.hold(ctx, e.cfg.Logger, j.Kind(), name, "before")
	bound := e.cfg.StepTimeout(name)
	deadline := started.Add(bound)
	stepCtx, cancel := context.WithDeadline(ctx, deadline)
	// A panicking step fails its operation (a PanicError is not
	// retryable), so an operation that panics on resume is not retried forever.
	err = safe.Call(e.cfg.Logger, "step "+name+" of "+j.Kind(), func() error { return e.host.Run(stepCtx, j, i) })
	timedOut := stepCtx.Err() == context.DeadlineExceeded
	cancel()
	e.retries.forget(k) // noted again below when retried later
	if _, wait := asWait(err); wait && !timedOut {
		return err // not done, not failed: run again later
	}
	if err == nil {
		e.cfg.Failpoints.hold(ctx, e.cfg.Logger, j.Kind(), name, "after")
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return e.host.StepSucceeded(ctx, j, i)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if timedOut || !e.cfg.Now().Before(deadline) {
		return &stuckError{fmt.Errorf("step %s of %s exceeded its time bound of %s: %w", name, j.Kind(), bound, err)}
	}
	if !e.cfg.Retryable(err) {
		return err
	}
	e.host.Retrying(ctx, j, i, attempt, err)
	backoff := e.cfg.RetryBackoff
	for n := 1; n < attempt && backoff < e.cfg.MaxBackoff; n++ {
		backoff *= 2
	}
	after := min(jitter(min(backoff, e.cfg.MaxBackoff)), time.Until(deadline)+time.Millisecond)
	e.retries.note(k, retryState{step: i, attempt: attempt, started: started, next: time.Now().Add(after)})
	return &retryLater{after: after, cause: err}
}

// stepStarted returns when step i first started and which attempt this
// run is: a retry's run goes on from the retry state without journaling
// the step as running again (that would clear the retry's message);
// otherwise the step is journaled as running.
func (e *Engine[J]) stepStarted(ctx context.Context, k Key, j J, i int) (time.Time, int, error) {
	if rs, ok := e.retries.of(k); ok && rs.step == i {
		return rs.started, rs.attempt + 1, nil
	}
	started, err := e.host.StepRunning(ctx, j, i)
	return started, 1, err
}

// retryLater: the step failed transiently (cause); run the operation
// again after a backoff.
type retryLater struct {
	after time.Duration
	cause error
}

func (r *retryLater) Error() string { return fmt.Sprintf("%v (retried in %s)", r.cause, r.after) }
func (r *retryLater) Unwrap() error { return r.cause }

// retryState is what a step retried later carries to its next run.
type retryState struct {
	step, attempt int
	started       time.Time
	// next is when the retry is due: sweeps leave the operation alone
	// until then.
	next time.Time
}

// retryStates are the operations whose step waits to be retried.
type retryStates struct {
	mu sync.Mutex
	m  map[Key]retryState
}

func (r *retryStates) of(k Key) (retryState, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rs, ok := r.m[k]
	return rs, ok
}

func (r *retryStates) note(k Key, rs retryState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[Key]retryState{}
	}
	r.m[k] = rs
}

func (r *retryStates) forget(k Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

// due is false while k waits for a retry that is not due yet.
func (r *retryStates) due(k Key, now time.Time) bool {
	rs, ok := r.of(k)
	return !ok || !now.Before(rs.next)
}
