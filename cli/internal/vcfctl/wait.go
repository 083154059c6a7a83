package vcfctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/spf13/cobra"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

// goal is what --wait waits for once the operation has succeeded.
type goal struct {
	what string
	// statuses are the acceptable end statuses; empty accepts any status
	// but Busy.
	statuses []string
	// deleted waits for the service to disappear.
	deleted bool
}

var (
	goalCreated = goal{what: "create", statuses: []string{"Unresolved", "Ready"}}
	goalHealthy = goal{statuses: []string{"Healthy"}}
	goalSettled = goal{}
	goalDeleted = goal{what: "delete", deleted: true}
)

// Defaults of the --wait flags.
const (
	defaultTimeout = 15 * time.Minute
	defaultSettle  = 30 * time.Second
	// pendingEvery is how often a wait whose operation has succeeded
	// looks at the resources it still waits on.
	pendingEvery = 2 * time.Second
)

// waitOpts are the flags every command with --wait shares.
type waitOpts struct {
	wait    bool
	timeout time.Duration
	settle  time.Duration
}

// waitFlags adds --wait, --timeout and --settle; help says what --wait
// waits for.
func waitFlags(c *cobra.Command, o *waitOpts, help string) {
	c.Flags().BoolVar(&o.wait, "wait", false, help)
	c.Flags().DurationVar(&o.timeout, "timeout", defaultTimeout, "with --wait: give up after this long (exit 4; the operation goes on)")
	c.Flags().DurationVar(&o.settle, "settle", defaultSettle,
		"with --wait: how long the service may stay Unhealthy after its operation succeeded before the wait fails (exit 3)")
	prev := c.PreRunE
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		if !o.wait && (cmd.Flags().Changed("timeout") || cmd.Flags().Changed("settle")) {
			return usageErr("--timeout and --settle go with --wait")
		}
		if o.timeout <= 0 || o.settle < 0 {
			return usageErr("--timeout must be positive and --settle not negative")
		}
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}

// follower follows the operation an action started until it ends, and
// judges how it ended.
type follower struct {
	out  *printer
	sess *session // the server's hints in vcfctl words
	// poll is how often a rollout is read (rolloutPoll).
	poll time.Duration
}

// currentOperation is the id of the service's running (or last) operation.
func currentOperation(ctx context.Context, cl *api.Client, id string) (string, error) {
	st, err := serviceState(ctx, cl, id)
	if err != nil {
		return "", err
	}
	return st.GetOperation().GetId(), nil
}

func serviceState(ctx context.Context, cl *api.Client, id string) (*lifecyclev1.State, error) {
	raw, err := cl.Do(ctx, http.MethodGet, servicePath(id, "state"), nil)
	if err != nil {
		return nil, err
	}
	var st lifecyclev1.State
	if err := decode(raw, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// before is the service's last operation before an action, when the
// action will be waited for: an operation with another id afterwards is
// the action's, even when it has already ended.
func (f follower) before(ctx context.Context, cl *api.Client, id string, o waitOpts) (string, error) {
	if !o.wait {
		return "", nil
	}
	return currentOperation(ctx, cl, id)
}

// waiter follows one operation on the watch stream.
type waiter struct {
	out  *printer
	sess *session
	cl   *api.Client
	id   string
	opID string
	g    goal
	o    waitOpts
	prog progress

	// succeeded: the awaited operation ended well (or there is none), so
	// the status alone decides now.
	succeeded bool
	settle    *time.Timer
	pending   *time.Ticker
	last      *lifecyclev1.WatchServiceResponse
}

// wait follows the watch stream until the operation the action started
// (the service's operation when it is not prev) reaches g (nil), fails or
// blocks (errBlocked, details printed), times out (exit 4), or something
// else goes wrong. Actions that start no operation are judged by status
// alone.
func (f follower) wait(ctx context.Context, cl *api.Client, id, prev string, g goal, o waitOpts) error {
	opID, err := currentOperation(ctx, cl, id)
	switch {
	case api.IsNotFound(err) && g.deleted:
		f.out.report("%s: deleted\n", g.what)
		return nil
	case api.IsNotFound(err):
		// Gone already: its history says why.
		w := &waiter{out: f.out, sess: f.sess, cl: cl, id: id, g: g, o: o, prog: &plainProgress{w: f.out.status, what: g.what}}
		return w.vanished(ctx)
	case err != nil:
		return err
	}
	if opID == prev {
		opID = ""
	}
	w := &waiter{out: f.out, sess: f.sess, cl: cl, id: id, opID: opID, g: g, o: o, prog: f.out.newProgress(g.what), succeeded: opID == ""}
	defer w.stopTimers()
	err = w.follow(ctx)
	if err != nil {
		w.prog.finish(false)
	}
	return err
}

// event is what the stream's goroutine hands over.
type event struct {
	ev  *lifecyclev1.WatchServiceResponse
	err error // set once, when the stream ended
}

// follow reads the stream in a goroutine it owns (stopped and drained
// before it returns) and judges each event, the timers and the deadline.
func (w *waiter) follow(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	events := make(chan event)
	stopped := make(chan struct{})
	defer func() {
		cancel()
		<-stopped
	}()
	go func() {
		defer close(stopped)
		err := w.cl.Watch(sctx, w.id, func(raw json.RawMessage) error {
			ev := new(lifecyclev1.WatchServiceResponse)
			if err := decode(raw, ev); err != nil {
				return err
			}
			select {
			case events <- event{ev: ev}:
				return nil
			case <-sctx.Done():
				return sctx.Err()
			}
		})
		select {
		case events <- event{err: err}:
		case <-sctx.Done():
		}
	}()
	deadline := time.NewTimer(w.o.timeout)
	defer deadline.Stop()
	for {
		select {
		case e := <-events:
			if e.ev == nil {
				return w.streamEnded(e.err)
			}
			if done, err := w.judge(ctx, e.ev); done {
				return err
			}
		case <-w.settleC():
			w.settle = nil
			if w.last.GetStatus() == "Unhealthy" {
				return w.blocked(ctx, fmt.Sprintf("the service stayed Unhealthy for %s after the operation succeeded (--settle)", w.o.settle))
			}
		case <-w.pendingC():
			w.showPending(ctx)
		case <-deadline.C:
			return w.timedOut(ctx)
		case <-ctx.Done():
			return fmt.Errorf("interrupted; the operation goes on (follow it with 'vcfctl service watch %s')", w.id)
		}
	}
}

func (w *waiter) streamEnded(err error) error {
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("interrupted; the operation goes on (follow it with 'vcfctl service watch %s')", w.id)
	}
	if api.IsNotFound(err) && w.g.deleted {
		return w.reached(nil)
	}
	if err == nil {
		err = &api.StreamClosedError{ID: w.id}
	}
	return err
}

// judge decides on one event: done reports that the wait is over, with
// err its result.
func (w *waiter) judge(ctx context.Context, ev *lifecyclev1.WatchServiceResponse) (bool, error) {
	if op := ev.GetOperation(); op != nil && op.GetId() != w.opID {
		ev.Operation = nil // another operation's progress is not ours
	}
	w.last = ev
	if ev.GetDeleted() {
		if w.g.deleted {
			return true, w.reached(nil)
		}
		return true, w.vanished(ctx)
	}
	w.prog.update(ev)
	// The event carries the outcome once the operation ended; the history
	// answers when the stream coalesced that event away.
	outcome := ev.GetOperation().GetOutcome()
	if outcome == "" && !w.succeeded && ev.GetStatus() != "Busy" {
		var err error
		if outcome, err = w.outcome(ctx); err != nil {
			return true, err
		}
	}
	switch outcome {
	case "Running", "Pending":
		return false, nil
	case "", "Succeeded":
	default:
		return true, w.blocked(ctx, "operation "+outcome)
	}
	if outcome == "Succeeded" {
		w.succeeded = true
	}
	if !w.succeeded || w.g.deleted {
		return false, nil // deleting: only the deleted event ends the wait
	}
	return w.byStatus(ctx, ev)
}

// byStatus judges a service whose operation succeeded: the goal's status
// ends the wait; Unhealthy starts the settle window (still Unhealthy when
// it closes: the wait fails); anything else is waited on, showing the
// resources still pending.
func (w *waiter) byStatus(ctx context.Context, ev *lifecyclev1.WatchServiceResponse) (bool, error) {
	status := ev.GetStatus()
	if status != "Busy" && (len(w.g.statuses) == 0 || slices.Contains(w.g.statuses, status)) {
		return true, w.reached(ev)
	}
	if status == "Unhealthy" && w.settle == nil {
		w.settle = time.NewTimer(w.o.settle)
	}
	if w.pending == nil {
		w.pending = time.NewTicker(pendingEvery)
		w.showPending(ctx)
	}
	return false, nil
}

func (w *waiter) settleC() <-chan time.Time {
	if w.settle == nil {
		return nil
	}
	return w.settle.C
}

func (w *waiter) pendingC() <-chan time.Time {
	if w.pending == nil {
		return nil
	}
	return w.pending.C
}

func (w *waiter) stopTimers() {
	if w.settle != nil {
		w.settle.Stop()
	}
	if w.pending != nil {
		w.pending.Stop()
	}
}

// reached ends a wait that reached its goal; ev is the last event (nil
// for a deletion).
func (w *waiter) reached(ev *lifecyclev1.WatchServiceResponse) error {
	w.prog.finish(true)
	if ev == nil {
		w.out.report("%s: deleted\n", w.g.what)
		return nil
	}
	w.out.report("%s %s: %s (%s, version %s)\n", w.g.what, w.id, ev.GetStatus(), ev.GetLifecycleState(), ev.GetVersion())
	return nil
}

// outcome is the recorded outcome of the awaited operation.
func (w *waiter) outcome(ctx context.Context) (string, error) {
	op, err := w.operation(ctx)
	if err != nil {
		return "", err
	}
	return op.GetOutcome(), nil
}

// operation is the awaited operation as the history records it.
func (w *waiter) operation(ctx context.Context) (*lifecyclev1.Operation, error) {
	raw, err := w.cl.Do(ctx, http.MethodGet, servicePath(w.id, "history"), nil)
	if err != nil {
		return nil, err
	}
	var h lifecyclev1.ListServiceHistoryResponse
	if err := decode(raw, &h); err != nil {
		return nil, err
	}
	ops := h.GetOperations()
	for _, op := range ops {
		if op.GetId() == w.opID {
			return op, nil
		}
	}
	if w.opID == "" && len(ops) > 0 {
		return ops[len(ops)-1], nil // the operation was not known: the last one
	}
	return nil, fmt.Errorf("operation %s is not in the history of %s", w.opID, w.id)
}
