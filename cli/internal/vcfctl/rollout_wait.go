package vcfctl

import (
	"context"
	"fmt"
	"time"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"

	"github.com/vcfsm/vcfsm/cli/internal/api"
)

// rolloutPoll is how often an upgrade --wait that rolls out reads the
// rollout: a rollout's targets change without the service's status
// changing, so the watch stream does not carry every move.
const rolloutPoll = time.Second

// rolloutWait follows the rollout an upgrade started (operation opID;
// prev the operation before it) with a progress line per wave until it
// ends: Succeeded hands over to the usual wait for Healthy; RolledBack
// (or a rollout whose rollback was refused, which waits for an
// administrator) ends with exit 3 and what failed; --timeout with exit 4.
func (f follower) rolloutWait(ctx context.Context, cl *api.Client, id, prev, opID string, o waitOpts) error {
	start := time.Now()
	prog := f.out.newRolloutView("upgrade")
	ended := false
	defer func() { prog.finish(ended) }()
	tick := time.NewTicker(f.poll)
	defer tick.Stop()
	deadline := time.NewTimer(o.timeout)
	defer deadline.Stop()
	for {
		st, err := serviceState(ctx, cl, id)
		if err != nil {
			return err
		}
		r := st.GetRollout()
		if r.GetOperationId() != opID {
			r = nil // not laid out yet (or another's)
		}
		if r != nil {
			prog.show(r, f.sess.subject)
		}
		op := st.GetOperation()
		switch {
		case r != nil && r.GetState() == "RollbackRefused":
			prog.finish(false)
			return f.rolledBack(r, "the rollout needs an administrator: its rollback was refused")
		case op.GetId() != opID, // another operation started after ours: ours ended
			op.GetOutcome() != "" && op.GetOutcome() != "Running" && op.GetOutcome() != "Pending":
			ended = r != nil && r.GetState() == "Succeeded"
			prog.finish(ended)
			return f.afterRollout(ctx, cl, id, prev, r, o, start)
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			prog.finish(false)
			return f.rolloutTimedOut(o, r)
		case <-ctx.Done():
			return fmt.Errorf("interrupted; the rollout goes on (follow it with 'vcfctl rollout get %s')", f.sess.subject)
		}
	}
}

// afterRollout judges a rollout operation that ended: a succeeded one
// still has to reach Healthy (the usual wait, in the time left); any
// other ends with exit 3.
func (f follower) afterRollout(ctx context.Context, cl *api.Client, id, prev string, r *lifecyclev1.Rollout, o waitOpts, start time.Time) error {
	if r != nil && r.GetState() == "Succeeded" {
		o.timeout = max(o.timeout-time.Since(start), time.Second)
		g := goalHealthy
		g.what = "upgrade"
		return f.wait(ctx, cl, id, prev, g, o)
	}
	if r == nil {
		// It ended before laying out its waves (a refused download, a
		// plan that found no target): the operation says why.
		g := goalHealthy
		g.what = "upgrade"
		return f.wait(ctx, cl, id, prev, g, o)
	}
	why := "the rollout ended " + r.GetState()
	if r.GetState() == "RolledBack" {
		why = "the rollout rolled back"
	}
	return f.rolledBack(r, why)
}

// rolledBack prints why a rollout did not reach its goal, every target
// that failed or did not end on the new version, and the quarantine.
func (f follower) rolledBack(r *lifecyclev1.Rollout, why string) error {
	if r.GetReason() != "" {
		why += ": " + r.GetReason()
	}
	f.out.errorf("upgrade of %s to %s did not reach its goal: %s\n", f.sess.subject, r.GetToVersion(), f.sess.inVcfctlWords(why))
	for _, t := range r.GetTargets() {
		if t.GetState() == "Done" && t.GetVersion() == r.GetToVersion() {
			continue
		}
		line := fmt.Sprintf("  %s (wave %d): %s, version %s", t.GetSupervisor(), t.GetWave(), t.GetState(), orDash(t.GetVersion()))
		if t.GetMessage() != "" {
			line += ": " + t.GetMessage()
		}
		f.out.errorf("%s\n", line)
	}
	if r.GetState() == "RolledBack" {
		f.out.errorf("  version %s is quarantined: 'vcfctl catalog list' shows it, 'vcfctl version clear NAME %s' clears it\n",
			r.GetToVersion(), r.GetToVersion())
	}
	return errBlocked
}

// rolloutTimedOut ends a wait at --timeout (exit 4): the rollout goes on.
func (f follower) rolloutTimedOut(o waitOpts, r *lifecyclev1.Rollout) error {
	f.out.errorf("upgrade %s: not done after %s (--timeout); the rollout goes on (follow it with 'vcfctl rollout get %s')\n",
		f.sess.subject, o.timeout, f.sess.subject)
	if r != nil {
		f.out.errorf("  %s\n", rolloutHeader(r))
		for i, c := range waveCounts(r) {
			f.out.errorf("  %s\n", waveLine(r, i, c))
		}
	}
	return &exitError{code: ExitTimeout, err: errTimedOut, printed: true}
}
