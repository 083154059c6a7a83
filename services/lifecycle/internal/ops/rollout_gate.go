package ops

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// gate runs the checks of the wave's targets before anything moves:
// compatibility, the pre-check hook and the dynamic pre-checks, each on
// those targets only. ERRORs block the target (and so the wave, until an
// administrator overrides it or the cause is fixed and the rollout
// resumed); WARNINGs and INFOs are kept on the target. It returns why the
// wave cannot start, or "".
//
// A gate that cannot run on a target (the target, or a peer the checks
// need, does not answer) holds the wave instead (held: the run ends with
// err): see cannotRun.
func (w *waveRun) gate(ctx context.Context) (blocked string, held bool, err error) {
	sups := w.targetsIn(lifecycle.TargetPending, lifecycle.TargetBlocked, lifecycle.TargetWaitingWindow)
	if len(sups) == 0 {
		return "", false, nil
	}
	cannot, err := w.unreachable(ctx, sups)
	if err != nil {
		return "", true, err
	}
	var errs *gateResults
	if len(cannot) == 0 {
		errs = gateChecks(ctx, w.d, w.r, w.u, sups)
		cannot = errs.cannot
	}
	if len(cannot) > 0 {
		return "", true, w.cannotRun(ctx, cannot)
	}
	w.state().GateWaitingSince = time.Time{}
	return w.applyGate(errs, sups), false, nil
}

// applyGate keeps the checks' results on the targets and says why the
// wave is blocked ("" if it is not).
func (w *waveRun) applyGate(errs *gateResults, sups []string) string {
	w.r.note(errs.foldedNotes())
	var blocked []string
	for i := range w.st.Targets {
		t := &w.st.Targets[i]
		if t.Wave != w.k || !slices.Contains(sups, t.Supervisor) {
			continue
		}
		t.Notes = errs.notes[t.Supervisor]
		if msgs := errs.errors[t.Supervisor]; len(msgs) > 0 {
			t.State, t.Message = lifecycle.TargetBlocked, strings.Join(msgs, "; ")
			blocked = append(blocked, t.Supervisor+": "+t.Message)
			continue
		}
		if t.State == lifecycle.TargetBlocked || t.State == lifecycle.TargetPending {
			t.State, t.Message = lifecycle.TargetPending, ""
		}
	}
	if len(blocked) == 0 {
		return ""
	}
	if len(blocked) > 3 {
		blocked = append(blocked[:3], fmt.Sprintf("and %d more", len(blocked)-3))
	}
	return fmt.Sprintf("wave %s is blocked by its checks: %s (fix and resume, override with approve and a reason, or abort)", w.name(), strings.Join(blocked, "; "))
}

// cannotRun holds a wave whose gate cannot run on some of its targets
// (cannot: why, by Supervisor). Up to the strategy's gate timeout,
// counted from the first run that could not check them, the rollout stays
// Running and waits, saying which Supervisors and why, and the next poll
// tries again. Past it those targets fail and so does the wave, whatever
// its failure budget (a target that never moved cannot be left behind: a
// rollout that succeeded without it would leave it on the old version,
// which nothing moves afterwards): the wave's failure policy applies
// (rollback, or pause: Blocked until a resume checks them again, or an
// abort).
func (w *waveRun) cannotRun(ctx context.Context, cannot map[string]string) error {
	ws := w.state()
	timeout := fleet.GateTimeout(&w.st.Strategy)
	if ws.GateWaitingSince.IsZero() {
		ws.GateWaitingSince = w.now
	}
	var what []string
	for _, sup := range slices.Sorted(maps.Keys(cannot)) {
		what = append(what, sup+": "+cannot[sup])
	}
	if len(what) > 3 {
		what = append(what[:3], fmt.Sprintf("and %d more", len(what)-3))
	}
	detail := strings.Join(what, "; ")
	waited := w.now.Sub(ws.GateWaitingSince)
	if waited < timeout {
		w.markCannot(cannot, "", "its checks cannot run: ")
		return w.wait(ctx, lifecycle.RolloutRunning, fmt.Sprintf("wave %s waits: its checks cannot run on %s (for %s, up to the gate timeout of %s; abort rolls back)",
			w.name(), detail, waited.Round(time.Second), timeout))
	}
	ws.GateWaitingSince = time.Time{}
	w.markCannot(cannot, lifecycle.TargetFailed, fmt.Sprintf("its checks could not run within the gate timeout of %s: ", timeout))
	total, _, _, _ := w.counts()
	reason := fmt.Sprintf("wave %s: its checks could not run within the gate timeout of %s on %d of %d target(s): %s",
		w.name(), timeout, len(cannot), total, detail)
	if w.spec().OnFailure == lifecycle.OnFailurePause {
		ws.Blocked = true
		return w.wait(ctx, lifecycle.RolloutPaused, reason+"; paused (resume checks them again, abort rolls back)")
	}
	return w.failWave(ctx, reason)
}

// markCannot notes on the targets in cannot why their checks do not run
// (and, with state, moves them to it).
func (w *waveRun) markCannot(cannot map[string]string, state, prefix string) {
	for i := range w.st.Targets {
		t := &w.st.Targets[i]
		why, ok := cannot[t.Supervisor]
		if t.Wave != w.k || !ok {
			continue
		}
		t.Message = prefix + why
		if state != "" {
			t.State = state
		}
	}
}

// unreachable reads, on each of sups, the service's resources there (as
// they stand before the wave): a Supervisor one of whose reads does not
// get through is one the gate cannot run on. It returns why, by
// Supervisor.
func (w *waveRun) unreachable(ctx context.Context, sups []string) (map[string]string, error) {
	all, err := w.d.Repo.Resources(ctx, w.r.op.ServiceID)
	if err != nil {
		return nil, err
	}
	var res []*lifecycle.Resource
	for _, r := range all {
		if r.Supervisor != "" && r.Kind != "Overlay" && slices.Contains(sups, r.Supervisor) {
			res = append(res, r)
		}
	}
	out := map[string]string{}
	var mu sync.Mutex
	err = steps.Parallel(ctx, w.d.Log, w.d.Ports.Concurrency, len(res), func(ctx context.Context, i int) error {
		_, err := w.d.Ports.Driver.Get(ctx, res[i].Target)
		if err == nil || !errors.Is(err, target.ErrUnreachable) {
			return nil // absent, or refused: the checks say what it means
		}
		mu.Lock()
		defer mu.Unlock()
		if prev, ok := out[res[i].Supervisor]; !ok || err.Error() < prev {
			out[res[i].Supervisor] = err.Error()
		}
		return nil
	})
	return out, err
}
