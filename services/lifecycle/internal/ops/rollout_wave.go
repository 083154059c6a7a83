package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// waveRun is one run of a wave's step: it goes as far as it can (gates,
// moves, verification) and either finishes the wave, turns to the
// rollback, or asks the engine to run it again later. Everything it
// learns is journaled on the operation, so a run after a restart starts
// where the last one stopped.
type waveRun struct {
	d   *Deps
	r   *run
	u   *upgradeVersions
	k   int
	st  *lifecycle.RolloutState
	now time.Time
}

// runWave is the step of wave k.
func runWave(k int) func(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error {
	return func(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error {
		if r.op.Rollout == nil || k >= len(r.op.Rollout.Waves) {
			return lifecycle.Blocked(lifecycle.ErrTypeInstall, fmt.Errorf("the rollout has no wave %d", k+1))
		}
		if rollbackBegun(r.op) {
			// The wave turned to the rollback before a restart (killed
			// before its step was journaled done): it is over, and moves
			// nothing more forward.
			if i := stepIndex(r.op, fmt.Sprintf("wave-%d", k+1)); i >= 0 {
				r.op.Steps[i].Message = "rolling back: " + r.op.Rollout.Reason
			}
			return nil
		}
		w := &waveRun{d: d, r: r, u: u, k: k, st: r.op.Rollout, now: d.Now()}
		return w.run(ctx)
	}
}

func (w *waveRun) spec() lifecycle.Wave        { return w.st.Strategy.Waves[w.k] }
func (w *waveRun) state() *lifecycle.WaveState { return &w.st.Waves[w.k] }
func (w *waveRun) name() string                { return fleet.Name(&w.st.Strategy, w.k) }

// control is what administrators asked of this rollout.
func (w *waveRun) control() lifecycle.RolloutControl {
	if c := w.r.svc.RolloutControl; c != nil && c.OperationID == w.r.op.ID {
		return *c
	}
	return lifecycle.RolloutControl{}
}

func (w *waveRun) run(ctx context.Context) error {
	ctl := w.control()
	ws := w.state()
	switch {
	case ctl.Aborted:
		return w.beginRollback(ctx, fmt.Sprintf("aborted by %s", nonEmptyStr(ctl.By, "an administrator")))
	case ctl.Paused:
		return w.wait(ctx, lifecycle.RolloutPaused, fmt.Sprintf("paused by %s before wave %s", nonEmptyStr(ctl.By, "an administrator"), w.name()))
	}
	w.st.Wave = w.k
	if w.spec().Approval && ctl.Approved[w.k] == "" {
		ws.State = lifecycle.RolloutWaitingApproval
		return w.wait(ctx, lifecycle.RolloutWaitingApproval, fmt.Sprintf("wave %s waits for an administrator's approval (POST …/rollout/approve)", w.name()))
	}
	if ws.StartedAt.IsZero() {
		ws.StartedAt, ws.ApprovedBy = w.now, ctl.Approved[w.k]
		w.d.rollouts().WaveStarted(WaveForward)
	}
	ws.State = "Running"
	if ctl.Resumes > ws.Resumes {
		w.retry(ctl.Resumes)
	}
	switch {
	case ws.Blocked && ctl.Overridden[w.k] == "":
		return w.wait(ctx, lifecycle.RolloutPaused, w.st.Reason)
	case ws.Blocked:
		w.unblock()
	case !ws.Checked:
		reason, held, err := w.gate(ctx)
		if held {
			return err
		}
		if reason != "" && ctl.Overridden[w.k] == "" {
			ws.Blocked = true
			return w.wait(ctx, lifecycle.RolloutPaused, reason)
		}
		w.unblock()
	}
	w.st.State, w.st.Reason = lifecycle.RolloutRunning, ""
	// Each wave makes the new version live on its targets: the signature
	// policy is checked again (the keys may have changed since download).
	if err := verifyLive(w.d, w.u.svc, w.u.to, w.u.nb); err != nil {
		return w.beginRollback(ctx, err.Error())
	}
	if err := w.move(ctx); err != nil {
		return err
	}
	if err := w.verify(ctx, w.u.to, lifecycle.TargetVerifying, lifecycle.TargetDone, w.spec().Soak); err != nil {
		return err
	}
	w.d.failpoint(ctx, fmt.Sprintf("rollout/wave-%d:verified", w.k+1))
	return w.settle(ctx)
}

// settle ends the run: the wave is done, failed past its budget, or not
// there yet.
func (w *waveRun) settle(ctx context.Context) error {
	spec, ws := w.spec(), w.state()
	total, done, failed, waiting := w.counts()
	if failed > spec.MaxFailures {
		reason := fmt.Sprintf("wave %s: %d of %d target(s) failed, more than its budget of %d: %s", w.name(), failed, total, spec.MaxFailures, w.failures())
		return w.failWave(ctx, reason)
	}
	if done+failed == total && w.sharedHealthy(ctx) {
		ws.State, ws.DoneAt = "Done", w.now
		w.d.rollouts().WaveEnded(ctx, w.st, w.k, WaveForward, WaveDone)
		return saveRollout(ctx, w.d, w.r, fmt.Sprintf("wave %s done: %d of %d target(s)", w.name(), done, total))
	}
	msg := fmt.Sprintf("wave %d/%d (%s): %d of %d done, %d failed, %d waiting for a window", w.k+1, len(w.st.Waves), w.name(), done, total, failed, waiting)
	if err := saveRollout(ctx, w.d, w.r, msg); err != nil {
		return err
	}
	return engine.Wait(w.nextLook(), "%s", msg)
}

// failWave applies the wave's failure policy: pause (resume retries the
// failed targets, abort rolls back) or roll back.
func (w *waveRun) failWave(ctx context.Context, reason string) error {
	if w.spec().OnFailure == lifecycle.OnFailurePause {
		return w.wait(ctx, lifecycle.RolloutPaused, reason+"; paused (resume retries the failed targets, abort rolls back)")
	}
	w.state().State = "Failed"
	return w.beginRollback(ctx, reason)
}

// wait holds the rollout in state for reason and runs the wave again
// later.
func (w *waveRun) wait(ctx context.Context, state, reason string) error {
	w.st.State, w.st.Reason = state, reason
	if err := saveRollout(ctx, w.d, w.r, reason); err != nil {
		return err
	}
	return engine.Wait(w.d.rolloutPoll(), "%s", reason)
}

// counts the wave's targets by how they stand.
func (w *waveRun) counts() (total, done, failed, waiting int) {
	for _, t := range w.st.Targets {
		if t.Wave != w.k {
			continue
		}
		total++
		switch t.State {
		case lifecycle.TargetDone:
			done++
		case lifecycle.TargetFailed, lifecycle.TargetBlocked:
			failed++
		case lifecycle.TargetWaitingWindow:
			waiting++
		}
	}
	return total, done, failed, waiting
}

// failures names the first failed targets of the wave and why.
func (w *waveRun) failures() string {
	var out []string
	for _, t := range w.st.Targets {
		if t.Wave == w.k && (t.State == lifecycle.TargetFailed || t.State == lifecycle.TargetBlocked) {
			out = append(out, t.Supervisor+": "+t.Message)
		}
	}
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return strings.Join(out, "; ")
}

// nextLook is when to look again: soon, or when the first window opens
// if nothing else is under way.
func (w *waveRun) nextLook() time.Duration {
	next := w.d.rolloutPoll()
	busy := false
	var opens time.Time
	for _, t := range w.st.Targets {
		if t.Wave != w.k {
			continue
		}
		switch t.State {
		case lifecycle.TargetVerifying, lifecycle.TargetMoving, lifecycle.TargetPending:
			busy = true
		case lifecycle.TargetWaitingWindow:
			if opens.IsZero() || t.WindowOpens.Before(opens) {
				opens = t.WindowOpens
			}
		}
	}
	if !busy && !opens.IsZero() {
		// Look again when the window opens, and at least every minute:
		// the inventory (and so the window) may change meanwhile.
		next = min(max(opens.Sub(w.now), next), time.Minute)
	}
	return next
}

// retry acts on a resume: the wave's failed and blocked targets are tried
// again, its gates run again.
func (w *waveRun) retry(resumes int) {
	ws := w.state()
	ws.Resumes, ws.Checked, ws.Blocked, ws.GateWaitingSince = resumes, false, false, time.Time{}
	for i := range w.st.Targets {
		t := &w.st.Targets[i]
		if t.Wave == w.k && (t.State == lifecycle.TargetFailed || t.State == lifecycle.TargetBlocked) {
			t.State, t.Message, t.HealthyAt = lifecycle.TargetPending, "", time.Time{}
		}
	}
}

// unblock lets the wave go on: its gates passed, or an administrator
// overrode their ERRORs (the targets they blocked move too).
func (w *waveRun) unblock() {
	ws := w.state()
	ws.Checked, ws.Blocked = true, false
	for i := range w.st.Targets {
		t := &w.st.Targets[i]
		if t.Wave == w.k && t.State == lifecycle.TargetBlocked {
			t.State = lifecycle.TargetPending
			t.Message = "checks overridden: " + t.Message
		}
	}
}

// targetsIn names the wave's targets in any of the states.
func (w *waveRun) targetsIn(states ...string) []string {
	var out []string
	for _, t := range w.st.Targets {
		if t.Wave == w.k && slices.Contains(states, t.State) {
			out = append(out, t.Supervisor)
		}
	}
	return out
}

// isResourceFailure: a move that went through with some resources failed
// (they show on their targets' verification); other errors are the
// step's (retried when transient).
func isResourceFailure(err error) bool {
	var b *lifecycle.BlockedError
	return errors.As(err, &b) && b.ErrType == lifecycle.ErrTypeResource
}

// rolloutPoll is how often a rollout looks at its targets.
func (d *Deps) rolloutPoll() time.Duration {
	if d.RolloutPoll > 0 {
		return d.RolloutPoll
	}
	return time.Second
}

// scopeOf is the resources a move of sups (and, with shared, the shared
// resources of wave k) reaches.
func scopeOf(st *lifecycle.RolloutState, sups []string, shared bool, k int) func(*lifecycle.Resource) bool {
	return func(r *lifecycle.Resource) bool {
		if r.Supervisor != "" {
			return slices.Contains(sups, r.Supervisor)
		}
		return shared && fleet.WaveOf(r, st) == k
	}
}

var _ = steps.Rendered{}
