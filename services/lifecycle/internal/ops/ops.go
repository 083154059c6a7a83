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
	"time"

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
	Kick     func(serviceID string)
	Observer Observer
	Log      *slog.Logger
	Now      func() time.Time
	// RolloutPoll is how often a running rollout looks at its targets
	// (0: every second).
	RolloutPoll time.Duration

	// failpoints hold a step between two of its own journal writes, for
	// the crash tests (the engine holds before and after each step).
	failpoints engine.Failpoints
}

// failpoint holds at the named point when the crash tests set it.
func (d *Deps) failpoint(ctx context.Context, name string) {
	d.failpoints.Hold(ctx, d.Log, name)
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
	typ   string
	steps []step
	// dynamic finds the steps an operation adds as it runs (a rollout's
	// waves and their rollback), by name.
	dynamic func(name string) (step, bool)
	// onSuccess and onFailure edit the service in the transaction that
	// closes the operation (and frees the service for the next one).
	onSuccess func(svc *lifecycle.Service, op *lifecycle.Operation)
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
	svc.Progress = &lifecycle.Progress{OperationID: op.ID, Type: op.Type, Override: op.Override, Step: op.Steps[0].Name, Percent: -1}
}

// run is one execution of an operation; scratch holds what steps computed
// (recomputed after a restart).
type run struct {
	op *lifecycle.Operation

	svc     *lifecycle.Service
	scratch map[string]any
}

// note keeps what a step's checks said in the operation's record (journaled
// with the step's end; a step run again notes the same once).
func (r *run) note(notes []lifecycle.ErrorDetail) {
	r.op.Notes = lifecycle.AddDetails(r.op.Notes, notes...)
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
