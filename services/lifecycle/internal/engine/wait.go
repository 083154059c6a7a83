package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// WaitError is what a step returns when it cannot go on yet and should be
// run again later without holding a worker: a gate waiting for an
// approval, a maintenance window or a soak time. It is not a failure: the
// operation stays unfinished, its step not done, and the engine runs the
// step again after the wait (or sooner, when something enqueues the
// operation). Waiting does not count toward the step's time bound: the
// host journals the wait (Waiter) and the bound starts again with the
// next run.
type WaitError struct {
	After  time.Duration
	Reason string
}

func (w *WaitError) Error() string {
	return fmt.Sprintf("waiting %s: %s", w.After, w.Reason)
}

// Wait asks the engine to run the step again after d.
func Wait(d time.Duration, format string, args ...any) error {
	return &WaitError{After: max(d, time.Millisecond), Reason: fmt.Sprintf(format, args...)}
}

// Waiter is what a Host may add to journal that step i waits (the step's
// time bound then starts again with its next run).
type Waiter[J Job] interface {
	StepWaiting(ctx context.Context, j J, i int, w *WaitError)
}

// OutcomeWaiting is what an Observer is told of a run that ended waiting.
const OutcomeWaiting = "waiting"

// waits are the timers that enqueue waiting operations again; they stop
// with the engine's context.
type waits struct {
	mu     sync.Mutex
	timers map[Key]*time.Timer
}

// after enqueues k once d has passed, unless ctx ended; a later wait of
// the same operation replaces an earlier one.
func (w *waits) after(ctx context.Context, k Key, d time.Duration, enqueue func(Key)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	if w.timers == nil {
		w.timers = map[Key]*time.Timer{}
		context.AfterFunc(ctx, w.stopAll)
	}
	if t, ok := w.timers[k]; ok {
		t.Stop()
	}
	w.timers[k] = time.AfterFunc(d, func() {
		w.mu.Lock()
		delete(w.timers, k)
		w.mu.Unlock()
		if ctx.Err() == nil {
			enqueue(k)
		}
	})
}

func (w *waits) stopAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, t := range w.timers {
		t.Stop()
		delete(w.timers, k)
	}
}

// asWait reports whether err asks to wait.
func asWait(err error) (*WaitError, bool) {
	var w *WaitError
	ok := errors.As(err, &w)
	return w, ok
}
