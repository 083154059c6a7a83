package ops

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Engine tunes the operation engine (engine.Config without what Deps
// gives it).
type Engine struct {
	Workers      int
	StepTimeout  func(step string) time.Duration
	RetryBackoff time.Duration
	SweepEvery   time.Duration
	Claims       engine.Claims
	ClaimSweep   time.Duration
}

// Runner starts operations and runs them on the engine.
type Runner struct {
	d      Deps
	engine *engine.Engine[*run]
}

// New returns a runner; Start runs its workers.
func New(d Deps, e Engine) *Runner {
	r := &Runner{d: d}
	// VCFSM_FAILPOINTS is unset in production; the crash tests set it.
	r.d.failpoints = engine.ParseFailpoints(os.Getenv("VCFSM_FAILPOINTS"))
	r.engine = engine.New(engine.Config{
		Workers:      e.Workers,
		QueueSize:    4096,
		SweepEvery:   e.SweepEvery,
		StepTimeout:  e.StepTimeout,
		RetryBackoff: e.RetryBackoff,
		MaxBackoff:   30 * time.Second,
		Retryable:    retryable,
		Failpoints:   r.d.failpoints,
		Claims:       e.Claims,
		ClaimSweep:   e.ClaimSweep,
		Now:          d.Now,
		Logger:       d.Log,
		Observer:     d.Observer,
	}, host{r: r})
	return r
}

// Start resumes unfinished operations and runs the workers until ctx
// ends; wg tracks them.
func (r *Runner) Start(ctx context.Context, wg *sync.WaitGroup) error {
	r.countResumed(ctx)
	return r.engine.Start(ctx, wg)
}

// QueueDepth is the number of operations waiting for a worker.
func (r *Runner) QueueDepth() int { return r.engine.QueueDepth() }

// countResumed tells the observer of the unfinished operations found at
// start. It is not done where the engine lists unfinished operations: the
// takeover sweep lists them again and again.
func (r *Runner) countResumed(ctx context.Context) {
	ops, err := r.d.Repo.UnfinishedOperations(ctx)
	if err != nil {
		return // the engine's own listing reports the error
	}
	for _, op := range ops {
		if op.Outcome != lifecycle.OutcomeStuck {
			r.d.Log.Info("resuming operation", "service", op.ServiceID, "operation", op.ID, "type", op.Type)
			r.d.Observer.OperationResumed(op.Type)
		}
	}
}

// enqueue queues op for a worker; the request in ctx is the one whose
// trace the operation's run continues.
func (r *Runner) enqueue(ctx context.Context, op *lifecycle.Operation) {
	k := engine.Key{Service: op.ServiceID, Operation: op.ID}
	r.d.Observer.OperationQueued(ctx, k.String())
	r.engine.Enqueue(k)
}
