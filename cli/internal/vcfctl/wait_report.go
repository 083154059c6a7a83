package vcfctl

import (
	"context"
	"fmt"
	"strings"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

// blocked prints why the wait failed and every error detail of the
// service, and ends with exit 3.
func (w *waiter) blocked(ctx context.Context, why string) error {
	w.prog.finish(false)
	st, err := serviceState(ctx, w.cl, w.id)
	if api.IsNotFound(err) {
		return w.vanished(ctx) // removed as it failed
	}
	if err != nil {
		return err
	}
	w.out.errorf("%s %s did not reach its goal: %s\n", w.g.what, w.id, why)
	for _, d := range st.GetErrorDetails() {
		w.out.errorf("  %s %s: %s\n", d.GetSeverity(), d.GetType(), w.sess.inVcfctlWords(d.GetMessage()))
	}
	return errBlocked
}

// vanished: the service was deleted while the wait expected it to stay.
// A registration refused after its download removes its service; the
// history still tells why.
func (w *waiter) vanished(ctx context.Context) error {
	w.prog.finish(false)
	if op, err := w.operation(ctx); err == nil && op.GetOutcome() != "Succeeded" {
		w.out.errorf("%s %s did not reach its goal: operation %s; the service was removed\n", w.g.what, w.id, op.GetOutcome())
		for _, s := range op.GetSteps() {
			if s.GetStatus() == "Failed" {
				w.out.errorf("  step %s: %s\n", s.GetName(), w.sess.inVcfctlWords(s.GetMessage()))
			}
		}
		return errBlocked
	}
	return fmt.Errorf("the service %s was deleted while waiting", w.id)
}

// timedOut reports what the operation still waits on and ends with exit
// 4: the operation itself goes on.
func (w *waiter) timedOut(ctx context.Context) error {
	w.prog.finish(false)
	w.out.errorf("%s %s: not done after %s (--timeout); the operation goes on (follow it with 'vcfctl service watch %s')\n",
		w.g.what, w.id, w.o.timeout, w.id)
	st, err := serviceState(ctx, w.cl, w.id)
	if err != nil {
		return err
	}
	if op := st.GetOperation(); op != nil && op.GetId() == w.opID && op.GetOutcome() == "" {
		w.out.errorf("  operation %s\n", operationText(op))
	}
	if w.last != nil {
		w.out.errorf("  service status %s\n", w.last.GetStatus())
	}
	if pending := pendingResources(st); len(pending) > 0 {
		w.out.errorf("  still pending:\n")
		for _, p := range pending {
			w.out.errorf("    %s\n", p)
		}
	}
	return &exitError{code: ExitTimeout, err: errTimedOut, printed: true}
}

// showPending shows on the progress display which resources the wait
// still waits on, once the operation has succeeded.
func (w *waiter) showPending(ctx context.Context) {
	st, err := serviceState(ctx, w.cl, w.id)
	if err != nil {
		return // the next tick or event tries again
	}
	pending := pendingResources(st)
	switch len(pending) {
	case 0:
		w.prog.note("")
	case 1:
		w.prog.note("waiting for " + pending[0])
	default:
		w.prog.note(fmt.Sprintf("waiting for %d resources: %s, …", len(pending), pending[0]))
	}
}

// pendingResources describes every resource that is not Healthy: kind,
// name, Supervisor, status and message.
func pendingResources(st *lifecyclev1.State) []string {
	var out []string
	for _, r := range st.GetResources() {
		if r.GetStatus() == "Healthy" {
			continue
		}
		line := strings.TrimSpace(r.GetType() + " " + r.GetName())
		if r.GetSupervisor() != "" {
			line += " on " + r.GetSupervisor()
		}
		line += ": " + r.GetStatus()
		if r.GetMessage() != "" {
			line += ": " + r.GetMessage()
		}
		out = append(out, line)
	}
	return out
}

// operationText says what an operation is doing or how it ended:
// "upgrade running: step resources (50%): applied: …" or "upgrade
// Failed at step precheck-hook: …".
func operationText(op *lifecyclev1.OperationProgress) string {
	if out := op.GetOutcome(); out != "" {
		text := op.GetType() + " " + out
		if out == "Succeeded" || op.GetStep() == "" {
			return text
		}
		text += " at step " + op.GetStep()
		// The server's message repeats where it ended: say it once.
		m := strings.TrimPrefix(op.GetMessage(), strings.ToLower(out)+" at step "+op.GetStep()+": ")
		if m != "" {
			text += ": " + m
		}
		return text
	}
	text := op.GetType() + " running"
	if op.GetStep() != "" {
		text += ": step " + op.GetStep()
	}
	if pc := percentText(op.GetPercent()); pc != "" {
		text += " (" + pc + ")"
	}
	if m := op.GetMessage(); m != "" {
		text += ": " + m
	}
	return text
}
