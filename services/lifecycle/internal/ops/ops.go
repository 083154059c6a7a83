// Package ops holds the lifecycle operations: register, activate,
// configure, upgrade, rollback and delete. Each is a step table in its own
// file — the steps in order, each a name and the function that runs it —
// plus what a failure does to the service; the engine (internal/engine)
// runs the table one journaled step at a time (host.go). The requests that
// start operations (create, PUT/PATCH, delete, rollback, register a
// version, replace the inventory) are the Runner's methods.
package ops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/commit"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// Observer is told of operations being queued and resumed, and (as the
// engine's observer) of each run and step.
type Observer interface {
	engine.Observer
	// OperationQueued: an operation was queued by the request in ctx
	// (whose trace the operation's execution continues).
	OperationQueued(ctx context.Context, key string)
	// OperationResumed: an unfinished operation was found at start.
	OperationResumed(opType string)
}

// Deps are what the operations reach. Ports.Store is Writer.
type Deps struct {
	Repo    lifecycle.Repository
	Bundles lifecycle.Bundles
	Ports   steps.Ports
	Writer  *commit.Writer
	// Kick queues a controller pass over a service (a new version was
	// registered: it may upgrade automatically).
	Kick func(serviceID string)
	// VerifySignatures, when set, must accept a bundle's signatures before
	// an activation that accepted them (trusted keys are configured).
	VerifySignatures func(*bundle.Bundle) error
	Observer         Observer
	Log              *slog.Logger
	Now              func() time.Time
}

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
	r.engine = engine.New(engine.Config{
		Workers:      e.Workers,
		QueueSize:    4096,
		SweepEvery:   e.SweepEvery,
		StepTimeout:  e.StepTimeout,
		RetryBackoff: e.RetryBackoff,
		MaxBackoff:   30 * time.Second,
		Retryable:    retryable,
		// VCFSM_FAILPOINTS is unset in production; the crash tests set it.
		Failpoints: engine.ParseFailpoints(os.Getenv("VCFSM_FAILPOINTS")),
		Claims:     e.Claims,
		ClaimSweep: e.ClaimSweep,
		Now:        d.Now,
		Logger:     d.Log,
		Observer:   d.Observer,
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

// step is one row of an operation's table: its name (journaled, named by
// failpoints and shown as progress) and what it does. Every step is
// idempotent: a restarted run repeats the step it was in.
type step struct {
	name string
	run  func(ctx context.Context, d *Deps, r *run) error
}

// operation is one type of operation: its steps in order and what a
// failure (or a step stuck past its bound) does to the service.
type operation struct {
	typ       string
	steps     []step
	onFailure func(svc *lifecycle.Service, op *lifecycle.Operation, outcome string)
}

// names are the operation's step names, in order, as journaled.
func (o *operation) names() []string {
	out := make([]string, len(o.steps))
	for i, s := range o.steps {
		out[i] = s.name
	}
	return out
}

// start records a new operation of this type on svc (the caller writes it
// in the transaction that changes svc).
func (o *operation) start(d *Deps, svc *lifecycle.Service, by string, params lifecycle.OperationParams) *lifecycle.Operation {
	now := d.Now()
	op := &lifecycle.Operation{
		ID: newOperationID(now), ServiceID: svc.ID, ServiceName: svc.Name, Type: o.typ,
		FromVersion: svc.Version, Outcome: lifecycle.OutcomePending, RequestedBy: by, StartedAt: now, Params: params,
	}
	for _, name := range o.names() {
		op.Steps = append(op.Steps, lifecycle.Step{Name: name, Status: lifecycle.StepPending})
	}
	return op
}

// operationTypes maps each operation type to its table.
func operationTypes() map[string]*operation {
	return map[string]*operation{
		lifecycle.OpRegister:  &registerOp,
		lifecycle.OpActivate:  &activateOp,
		lifecycle.OpConfigure: &reconfigureOp,
		lifecycle.OpUpgrade:   &upgradeOp,
		lifecycle.OpRollback:  &rollbackOp,
		lifecycle.OpDelete:    &deleteOp,
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
	return def, step{}, fmt.Errorf("operation %s (%s) journaled step %q, which this version does not have (steps: %v)", op.ID, op.Type, name, def.names())
}

// newOperationID sorts by creation time.
func newOperationID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%016x-%s", now.UnixNano(), hex.EncodeToString(b[:]))
}

// recordInstant adds a finished, step-less operation to the history (pause,
// resume, deactivate happen inside the request's own transaction).
func recordInstant(d *Deps, svc *lifecycle.Service, typ, by string) {
	now := d.Now()
	svc.PendingHistory = append(svc.PendingHistory, &lifecycle.Operation{
		ID: newOperationID(now), ServiceID: svc.ID, ServiceName: svc.Name, Type: typ,
		FromVersion: svc.Version, ToVersion: svc.Version, Outcome: lifecycle.OutcomeSucceeded, RequestedBy: by,
		StartedAt: now, FinishedAt: now,
	})
}

// running marks op as svc's running operation (in the transaction that
// records it).
func running(svc *lifecycle.Service, op *lifecycle.Operation) {
	svc.ActiveOperation = op.ID
	svc.Progress = &lifecycle.Progress{OperationID: op.ID, Type: op.Type, Step: op.Steps[0].Name, Percent: -1}
}
