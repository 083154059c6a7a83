// Package engine runs durable, step-by-step operations: a bounded queue,
// workers, a step runner that journals each step before and after it acts,
// retries with jittered backoff, per-step time bounds and failpoints for
// the crash tests. It knows nothing of what the operations do: the domain
// supplies a Host that loads, journals and runs them.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Key names one operation: the service it changes and its id.
type Key struct{ Service, Operation string }

func (k Key) String() string { return k.Service + "|" + k.Operation }

// Job is a loaded operation as the engine sees it.
type Job interface {
	// Kind is the operation type (register, upgrade…): failpoints and logs
	// name it.
	Kind() string
	// Runnable is false for a finished or stuck operation.
	Runnable() bool
	// Steps is the number of steps; StepName names step i.
	Steps() int
	StepName(i int) string
	// StepDone reports a step that succeeded or was skipped.
	StepDone(i int) bool
	// Outcome is how the operation ended, once the Host closed it.
	Outcome() string
}

// OutcomeInterrupted is what an Observer is told of a run stopped by
// shutdown or a takeover: the operation resumes or is superseded.
const OutcomeInterrupted = "interrupted"

// OutcomeRetrying is what an Observer is told of a run whose step failed
// transiently: the operation runs again after a backoff, without holding
// a worker in between.
const OutcomeRetrying = "retrying"

// Observer is told when operations and steps run, for metrics and traces.
// It runs inline: implementations must be fast and safe for concurrent use.
type Observer interface {
	// OperationStarted: a worker begins (or resumes) running an operation;
	// done reports the Job's Outcome, or OutcomeInterrupted.
	OperationStarted(ctx context.Context, key, kind string) (_ context.Context, done func(outcome string))
	// StepStarted: one run of a step begins (each retry is a run of its
	// own); done reports its error (nil: succeeded).
	StepStarted(ctx context.Context, kind, step string) (_ context.Context, done func(err error))
}

type nopObserver struct{}

func (nopObserver) OperationStarted(ctx context.Context, _, _ string) (context.Context, func(string)) {
	return ctx, func(string) {}
}
func (nopObserver) StepStarted(ctx context.Context, _, _ string) (context.Context, func(error)) {
	return ctx, func(error) {}
}

// Host is the domain side of the engine: it loads operations, records their
// progress and runs their steps.
type Host[J Job] interface {
	// Load reads an operation from the journal.
	Load(ctx context.Context, k Key) (J, error)
	// Unfinished lists the operations to resume.
	Unfinished(ctx context.Context) ([]Key, error)
	// StepRunning journals step i as running before it acts and returns
	// when it first started (its time bound counts from then).
	StepRunning(ctx context.Context, j J, i int) (time.Time, error)
	// Run executes step i once; it must be idempotent.
	Run(ctx context.Context, j J, i int) error
	// StepSucceeded journals step i as done.
	StepSucceeded(ctx context.Context, j J, i int) error
	// Retrying shows that step i failed transiently and is retried.
	Retrying(ctx context.Context, j J, i, attempt int, cause error)
	// Failed closes the operation at step i; stuck when the step exceeded
	// its time bound.
	Failed(ctx context.Context, j J, i int, cause error, stuck bool)
	// Succeeded closes the operation after its last step.
	Succeeded(ctx context.Context, j J)
}

// ErrClaimed: another live replica runs the service's operations.
var ErrClaimed = errors.New("engine: another replica runs this service's operations")

// Claims gives one replica at a time the right to run a service's
// operations.
type Claims interface {
	// Claim takes the service for this replica, or fails with ErrClaimed.
	// The returned context carries what fences the operation's writes and
	// ends when the claim is lost; release gives the claim up.
	Claim(ctx context.Context, service string) (claimed context.Context, release func(), err error)
}

// Config tunes an engine.
type Config struct {
	// Workers is how many operations run at once.
	Workers int
	// QueueSize bounds the queue; an operation that does not fit is found
	// by the next sweep.
	QueueSize int
	// SweepEvery is how often workers look for operations that did not fit
	// in the queue.
	SweepEvery time.Duration
	// StepTimeout bounds one step by name.
	StepTimeout func(step string) time.Duration
	// RetryBackoff is the first wait before retrying; it doubles up to
	// MaxBackoff, each wait jittered.
	RetryBackoff, MaxBackoff time.Duration
	// Retryable says whether a step error is worth retrying.
	Retryable func(error) bool
	// Claims, when set, makes each operation's service exclusive across
	// replicas sharing the journal (see Claims); nil: this process is
	// the only one.
	Claims Claims
	// ClaimSweep is how often, with Claims, a replica looks for unfinished
	// operations no live replica runs (their owner died) to take over.
	ClaimSweep time.Duration
	// Failpoints hold a worker at named points (see Failpoints).
	Failpoints Failpoints
	Now        func() time.Time
	Logger     *slog.Logger
	// Observer sees operations and steps run; nil: nobody.
	Observer Observer
}

// Engine runs operations for one Host.
type Engine[J Job] struct {
	cfg  Config
	host Host[J]

	queue      chan Key
	overflowed atomic.Bool

	mu      sync.Mutex
	running map[Key]bool
	again   map[Key]bool                  // queued again while running
	cancels map[string]context.CancelFunc // by service

	// waiting: operations whose step asked to wait, or failed and is
	// retried, enqueued again later.
	waiting waits
	retries retryStates
}

// New builds an engine; Start runs it.
func New[J Job](cfg Config, host Host[J]) *Engine[J] {
	if cfg.Workers <= 0 {
		cfg.Workers = 1
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 4096
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 30 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Claims != nil && cfg.ClaimSweep <= 0 {
		cfg.ClaimSweep = time.Second
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Retryable == nil {
		cfg.Retryable = func(error) bool { return false }
	}
	return &Engine[J]{cfg: cfg, host: host, queue: make(chan Key, cfg.QueueSize),
		running: map[Key]bool{}, again: map[Key]bool{}, cancels: map[string]context.CancelFunc{}}
}

// Start queues the unfinished operations and runs the workers until ctx
// ends; wg counts the workers.
func (e *Engine[J]) Start(ctx context.Context, wg *sync.WaitGroup) error {
	keys, err := e.host.Unfinished(ctx)
	if err != nil {
		return fmt.Errorf("resume operations: %w", err)
	}
	for range e.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.worker(ctx)
		}()
	}
	for _, k := range keys {
		e.Enqueue(k)
	}
	if e.cfg.Claims != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.takeOver(ctx)
		}()
	}
	return nil
}

// ActiveLister is what a Host may add so the frequent takeover sweep need
// not read every operation: Active lists, cheaply, the operations its
// services say are running.
type ActiveLister interface {
	Active(ctx context.Context) ([]Key, error)
}

// fullSweepEvery: with an ActiveLister, every so many takeover sweeps
// still read every unfinished operation (one whose service record is
// already gone, at the end of a delete).
const fullSweepEvery = 10

// takeOver queues, every ClaimSweep, the unfinished operations this
// replica does not run: those whose owner died are claimed by the first
// replica to get there; the others are refused by their live owner's claim.
func (e *Engine[J]) takeOver(ctx context.Context) {
	t := time.NewTicker(e.cfg.ClaimSweep)
	defer t.Stop()
	active, cheap := any(e.host).(ActiveLister)
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !cheap || n%fullSweepEvery == 0 {
			e.sweep(ctx)
			continue
		}
		keys, err := active.Active(ctx)
		if err != nil {
			continue
		}
		e.enqueueIdle(keys)
	}
}

// Enqueue asks a worker to run (or resume) an operation.
func (e *Engine[J]) Enqueue(k Key) {
	select {
	case e.queue <- k:
	default:
		// The queue is full: the operation stays recorded as unfinished
		// and the next sweep picks it up.
		e.overflowed.Store(true)
		e.cfg.Logger.Warn("operation queue full; the sweep will pick the operation up", "operation", k.String())
	}
}

// QueueDepth is the number of operations waiting for a worker.
func (e *Engine[J]) QueueDepth() int { return len(e.queue) }

// Cancel stops the operation running on a service, if any (a force
// delete or a rollback takes over).
func (e *Engine[J]) Cancel(service string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.cancels[service]; ok {
		c()
	}
}

func (e *Engine[J]) worker(ctx context.Context) {
	sweep := time.NewTicker(e.cfg.SweepEvery)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case k := <-e.queue:
			e.execute(ctx, k)
		case <-sweep.C:
			// Scanning every operation is only needed when one could not
			// be queued.
			if e.overflowed.Swap(false) {
				e.sweep(ctx)
			}
		}
	}
}

func (e *Engine[J]) sweep(ctx context.Context) {
	keys, err := e.host.Unfinished(ctx)
	if err != nil {
		return
	}
	e.enqueueIdle(keys)
}

// enqueueIdle queues the operations among keys this replica is not running.
func (e *Engine[J]) enqueueIdle(keys []Key) {
	for _, k := range keys {
		e.mu.Lock()
		busy := e.running[k]
		e.mu.Unlock()
		if !busy && e.retries.due(k, time.Now()) {
			e.Enqueue(k)
		}
	}
}

// claim marks k running and registers its cancel; false when it already
// runs.
func (e *Engine[J]) claim(parent context.Context, k Key) (context.Context, func(), bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running[k] {
		// Queued again while it runs (a takeover re-queues an operation,
		// then cancels its run): run it again once this run lets go, or
		// the new request would be lost.
		e.again[k] = true
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(parent)
	e.running[k] = true
	e.cancels[k.Service] = cancel
	return ctx, func() {
		cancel()
		e.mu.Lock()
		delete(e.running, k)
		delete(e.cancels, k.Service)
		again := e.again[k]
		delete(e.again, k)
		e.mu.Unlock()
		if again && parent.Err() == nil {
			e.Enqueue(k)
		}
	}, true
}

// execute runs one operation to its end, resuming after its last done
// step.
func (e *Engine[J]) execute(parent context.Context, k Key) {
	ctx, release, ok := e.claim(parent, k)
	if !ok {
		return
	}
	defer release()
	if e.cfg.Claims != nil {
		// Finished or stuck operations are not worth a claim (the
		// takeover sweep offers them again and again).
		if j, err := e.host.Load(ctx, k); err != nil || !j.Runnable() {
			return
		}
		claimed, unclaim, err := e.cfg.Claims.Claim(ctx, k.Service)
		switch {
		case errors.Is(err, ErrClaimed):
			return // its owner runs it; the sweep retries should the owner die
		case err != nil:
			e.cfg.Logger.Warn("claim the service of an operation; retrying at the next sweep", "operation", k.String(), "error", err)
			return
		}
		defer unclaim()
		ctx = claimed
	}
	j, err := e.host.Load(ctx, k)
	if err != nil {
		e.cfg.Logger.Error("load operation", "operation", k.String(), "error", err)
		return
	}
	if !j.Runnable() {
		e.retries.forget(k)
		return
	}
	ctx, observed := e.cfg.Observer.OperationStarted(ctx, k.String(), j.Kind())
	outcome := OutcomeInterrupted
	defer func() { observed(outcome) }()
	// Steps() is read on every turn: a step may add steps (a rollout's
	// rollback of the waves it moved).
	for i := 0; i < j.Steps(); i++ {
		if j.StepDone(i) {
			continue
		}
		stepCtx, stepDone := e.cfg.Observer.StepStarted(ctx, j.Kind(), j.StepName(i))
		err := e.step(stepCtx, k, j, i)
		stepDone(err)
		var retry *retryLater
		if errors.As(err, &retry) {
			e.waiting.after(parent, k, retry.after, e.Enqueue)
			outcome = OutcomeRetrying
			return
		}
		if w, ok := asWait(err); ok && ctx.Err() == nil {
			if h, ok := any(e.host).(Waiter[J]); ok {
				h.StepWaiting(context.WithoutCancel(ctx), j, i, w)
			}
			e.waiting.after(parent, k, w.After, e.Enqueue)
			outcome = OutcomeWaiting
			return
		}
		if err != nil {
			if ctx.Err() != nil && parent.Err() == nil {
				// Cancelled by a takeover (force delete) or the claim was
				// lost to another replica: nothing to record.
				return
			}
			if parent.Err() != nil {
				return // shutting down: the step resumes on restart
			}
			var se *stuckError
			stuck := errors.As(err, &se)
			e.host.Failed(context.WithoutCancel(ctx), j, i, err, stuck)
			outcome = j.Outcome()
			return
		}
	}
	e.host.Succeeded(context.WithoutCancel(ctx), j)
	outcome = j.Outcome()
}
