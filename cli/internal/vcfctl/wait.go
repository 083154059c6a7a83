package vcfctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

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

// waiter follows one operation on the watch stream.
type waiter struct {
	ctx  context.Context
	a    *App
	cl   *api.Client
	id   string
	opID string
	g    goal
	prog progress
	// done and result are set when the wait has decided.
	done   bool
	result error
}

// currentOperation is the id of the service's running (or last) operation.
func currentOperation(ctx context.Context, cl *api.Client, id string) (string, error) {
	raw, err := cl.Do(ctx, http.MethodGet, servicePath(id, "state"), nil)
	if err != nil {
		return "", err
	}
	var st lifecyclev1.State
	if err := decode(raw, &st); err != nil {
		return "", err
	}
	return st.GetOperation().GetId(), nil
}

// before is the service's last operation before an action, when the
// action will be waited for: an operation with another id afterwards is
// the action's, even when it has already ended.
func (a *App) before(ctx context.Context, cl *api.Client, id string, wait bool) (string, error) {
	if !wait {
		return "", nil
	}
	return currentOperation(ctx, cl, id)
}

// wait follows the watch stream until the operation the action started
// (the service's operation when it is not prev) reaches g (nil), fails or
// blocks (errBlocked, details printed), or something else goes wrong.
// Actions that start no operation are judged by status alone.
func (a *App) wait(ctx context.Context, cl *api.Client, id, prev string, g goal) error {
	opID, err := currentOperation(ctx, cl, id)
	if api.IsNotFound(err) && g.deleted {
		a.printf("%s: deleted\n", g.what)
		return nil
	}
	if err != nil {
		return err
	}
	if opID == prev {
		opID = ""
	}
	w := &waiter{ctx: ctx, a: a, cl: cl, id: id, opID: opID, g: g, prog: a.newProgress(g.what)}
	err = cl.Watch(ctx, id, w.event)
	if api.IsNotFound(err) && g.deleted {
		w.done, w.result, err = true, nil, nil
		w.prog.finish(true)
		a.printf("%s: deleted\n", g.what)
	}
	if err != nil {
		w.prog.finish(false)
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("interrupted; the operation goes on (follow it with 'vcfctl service watch %s')", id)
		}
		return err
	}
	if !w.done {
		w.prog.finish(false)
		return fmt.Errorf("the watch of %s ended before the operation did", id)
	}
	return w.result
}

func (w *waiter) event(raw json.RawMessage) error {
	var ev lifecyclev1.WatchServiceResponse
	if err := decode(raw, &ev); err != nil {
		return err
	}
	if op := ev.GetOperation(); op != nil && op.GetId() != w.opID {
		ev.Operation = nil // another operation's progress is not ours
	}
	if !ev.GetDeleted() {
		w.prog.update(&ev)
	}
	if ev.GetDeleted() {
		w.done = true
		if !w.g.deleted {
			w.prog.finish(false)
			w.result = fmt.Errorf("the service was deleted while waiting")
			return api.ErrStop
		}
		w.prog.finish(true)
		w.a.printf("%s: deleted\n", w.g.what)
		return api.ErrStop
	}
	// The event carries the outcome once the operation ended; the history
	// answers when the stream coalesced that event away.
	outcome := ev.GetOperation().GetOutcome()
	if outcome == "" && ev.GetStatus() != "Busy" {
		var err error
		if outcome, err = w.outcome(w.ctx); err != nil {
			return err
		}
	}
	switch {
	case outcome == "Running" || outcome == "Pending":
		return nil
	case outcome != "Succeeded" && outcome != "" && outcome != "none":
		return w.blocked(fmt.Sprintf("operation %s", outcome))
	case ev.GetStatus() == "Busy":
		return nil
	case ev.GetStatus() == "Unhealthy":
		return w.blocked("service Unhealthy")
	case w.g.deleted:
		return nil // deleting: only the deleted event ends the wait
	case len(w.g.statuses) == 0 || slices.Contains(w.g.statuses, ev.GetStatus()):
		w.done = true
		w.prog.finish(true)
		w.a.printf("%s %s: %s (%s, version %s)\n", w.g.what, w.id, ev.GetStatus(), ev.GetLifecycleState(), ev.GetVersion())
		return api.ErrStop
	}
	return nil
}

// outcome is the recorded outcome of the awaited operation ("none" when
// the service had no operation to follow).
func (w *waiter) outcome(ctx context.Context) (string, error) {
	if w.opID == "" {
		return "none", nil
	}
	raw, err := w.cl.Do(ctx, http.MethodGet, servicePath(w.id, "history"), nil)
	if err != nil {
		return "", err
	}
	var h lifecyclev1.ListServiceHistoryResponse
	if err := decode(raw, &h); err != nil {
		return "", err
	}
	for _, op := range h.GetOperations() {
		if op.GetId() == w.opID {
			return op.GetOutcome(), nil
		}
	}
	return "", fmt.Errorf("operation %s is not in the history of %s", w.opID, w.id)
}

// blocked prints every error detail of the service and ends with exit 3.
func (w *waiter) blocked(why string) error {
	w.prog.finish(false)
	raw, err := w.cl.Do(w.ctx, http.MethodGet, servicePath(w.id, "state"), nil)
	if err != nil {
		return err
	}
	var st lifecyclev1.State
	if err := decode(raw, &st); err != nil {
		return err
	}
	_, _ = fmt.Fprintf(w.a.io.Err, "%s %s did not reach its goal: %s\n", w.g.what, w.id, why)
	for _, d := range st.GetErrorDetails() {
		_, _ = fmt.Fprintf(w.a.io.Err, "  %s %s: %s\n", d.GetSeverity(), d.GetType(), d.GetMessage())
	}
	w.done, w.result = true, errBlocked
	return api.ErrStop
}
