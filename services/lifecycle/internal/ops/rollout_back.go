package ops

import (
	"context"
	"fmt"
	"slices"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// beginRollback turns the rollout to its rollback: the waves not run yet
// (and promote) are skipped, and a rollback step per wave that may have
// moved anything is added, in reverse order, then "rolled-back". The
// wave's own step ends with why (it succeeds: the operation goes on, with
// the rollback).
func (w *waveRun) beginRollback(ctx context.Context, reason string) error {
	st := w.st
	st.State, st.Reason = lifecycle.RolloutRollingBack, reason
	if st.RollbackStartedAt.IsZero() {
		st.RollbackStartedAt = w.now
	}
	if ws := w.state(); !ws.StartedAt.IsZero() {
		outcome := WaveAborted
		if ws.State == "Failed" {
			outcome = WaveFailed
		}
		w.d.rollouts().WaveEnded(ctx, st, w.k, WaveForward, outcome)
	}
	current := stepIndex(w.r.op, fmt.Sprintf("wave-%d", w.k+1))
	for i := current + 1; i < len(w.r.op.Steps); i++ {
		if w.r.op.Steps[i].Status == lifecycle.StepPending {
			w.r.op.Steps[i].Status = lifecycle.StepSkipped
		}
	}
	for k := w.k; k >= 0; k-- {
		w.r.op.Steps = append(w.r.op.Steps, lifecycle.Step{Name: fmt.Sprintf("rollback-wave-%d", k+1), Status: lifecycle.StepPending})
	}
	w.r.op.Steps = append(w.r.op.Steps, lifecycle.Step{Name: "rolled-back", Status: lifecycle.StepPending})
	if current >= 0 {
		w.r.op.Steps[current].Message = "rolling back: " + reason
	}
	w.d.Log.Warn("rollout failed; rolling back the waves it moved", "service", w.r.op.ServiceID, "operation", w.r.op.ID, "reason", reason)
	return saveRollout(ctx, w.d, w.r, "rolling back: "+reason)
}

// rollbackBegun: the rollout turned to its rollback (its steps were
// added).
func rollbackBegun(op *lifecycle.Operation) bool { return stepIndex(op, "rolled-back") >= 0 }

// stepIndex is the index of the operation's step name, -1 if none.
func stepIndex(op *lifecycle.Operation, name string) int {
	return slices.IndexFunc(op.Steps, func(s lifecycle.Step) bool { return s.Name == name })
}

// rollbackWave is the step that takes wave k's moved targets (and its
// shared resources) back to the previous version, each verified Healthy
// on it before the step ends — so the waves come back in reverse order,
// one at a time. A SupervisorService that would be downgraded holds the
// rollback (seed 002) and the rollout says why.
func rollbackWave(k int) func(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error {
	return func(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error {
		st := r.op.Rollout
		w := &waveRun{d: d, r: r, u: u, k: k, st: st, now: d.Now()}
		st.RollbackWave = k
		ws := w.state()
		moving := w.targetsIn(lifecycle.TargetMoving, lifecycle.TargetVerifying, lifecycle.TargetDone, lifecycle.TargetFailed)
		var moved []string
		for _, t := range st.Targets {
			if t.Wave == k && !t.MovedAt.IsZero() && slices.Contains(moving, t.Supervisor) {
				moved = append(moved, t.Supervisor)
			}
		}
		if len(moved) > 0 || (ws.SharedMoved && w.hasShared()) {
			if ws.State != "RollingBack" {
				prev := &lifecycle.VersionRef{Version: u.old.Version, Digest: u.old.Digest, Values: u.old.Values}
				if err := checkSupervisorServiceDowngrade(ctx, d, u.svc, prev); err != nil {
					st.State, st.Reason = lifecycle.RolloutRollbackRefused, err.Error()
					if err := saveRollout(ctx, d, r, st.Reason); err != nil {
						return err
					}
					return engine.Wait(10*d.rolloutPoll(), "%s", st.Reason)
				}
				ws.State, ws.RollbackStartedAt = "RollingBack", w.now
				d.rollouts().WaveStarted(WaveRollback)
			}
			if err := w.moveBack(ctx, moved); err != nil {
				return err
			}
		}
		if err := w.verify(ctx, u.old.Version, lifecycle.TargetRollingBack, lifecycle.TargetRolledBack, 0); err != nil {
			return err
		}
		d.failpoint(ctx, fmt.Sprintf("rollout/rollback-wave-%d:verified", k+1))
		back := w.targetsIn(lifecycle.TargetRollingBack)
		failed := w.movedFailed()
		if len(back) == 0 && len(failed) == 0 && w.sharedBack(ctx) {
			if ws.State == "RollingBack" {
				d.rollouts().WaveEnded(ctx, st, k, WaveRollback, WaveRolledBack)
			}
			ws.State = "RolledBack"
			return saveRollout(ctx, d, r, fmt.Sprintf("wave %s rolled back", w.name()))
		}
		msg := fmt.Sprintf("rolling back wave %s: %d target(s) not Healthy on %s yet", w.name(), len(back)+len(failed), u.old.Version)
		if err := saveRollout(ctx, d, r, msg); err != nil {
			return err
		}
		return engine.Wait(d.rolloutPoll(), "%s", msg)
	}
}

// movedFailed names the wave's Failed targets that had moved: those that
// never did (their checks could not run) are on the previous version
// already, and stay Failed with why.
func (w *waveRun) movedFailed() []string {
	var out []string
	for _, t := range w.st.Targets {
		if t.Wave == w.k && t.State == lifecycle.TargetFailed && !t.MovedAt.IsZero() {
			out = append(out, t.Supervisor)
		}
	}
	return out
}

// moveBack moves the wave's moved targets (and its shared resources) back
// to the previous version; they are verified as RollingBack. They are
// journaled RollingBack only once moved: a process killed before moves
// them again after its restart.
func (w *waveRun) moveBack(ctx context.Context, moved []string) error {
	if err := saveRollout(ctx, w.d, w.r, fmt.Sprintf("rolling back wave %s: %d target(s)", w.name(), len(moved))); err != nil {
		return err
	}
	w.d.failpoint(ctx, fmt.Sprintf("rollout/rollback-wave-%d:moving", w.k+1))
	b, err := steps.LoadBundle(w.d.Bundles, w.u.old)
	if err != nil {
		return err
	}
	rend, err := steps.RenderFor(ctx, w.d.Ports.Render(), w.d.Writer, w.r.cache(), w.u.old, b)
	if err != nil {
		return err
	}
	err = steps.MoveResourcesWhere(ctx, w.d.Ports.Apply(), w.u.old, rend, w.u.old.Version, "rollback of wave "+w.name(), scopeOf(w.st, moved, true, w.k))
	if err != nil && !isResourceFailure(err) {
		return err
	}
	w.d.failpoint(ctx, fmt.Sprintf("rollout/rollback-wave-%d:moved", w.k+1))
	for i := range w.st.Targets {
		t := &w.st.Targets[i]
		if slices.Contains(moved, t.Supervisor) {
			t.State, t.Version, t.MovedAt, t.HealthyAt = lifecycle.TargetRollingBack, w.u.old.Version, w.now, w.now
		}
	}
	return nil
}

// sharedBack reports the wave's shared resources Healthy on the previous
// version again.
func (w *waveRun) sharedBack(ctx context.Context) bool {
	if !w.state().SharedMoved || !w.hasShared() {
		return true
	}
	h, err := w.read(ctx, w.u.old.Version, func(r *lifecycle.Resource) bool { return r.Supervisor == "" && fleet.WaveOf(r, w.st) == w.k })
	return err == nil && h[""].failed == "" && h[""].pending == ""
}

// rolloutRolledBack ends a rolled-back rollout: the version is quarantined
// in the catalog, the service leaves maintenance on its previous version,
// and the operation ends RolledBack (host.finish reads it from the
// rollout's state).
func rolloutRolledBack(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error {
	st := r.op.Rollout
	if st.State != lifecycle.RolloutRolledBack && !st.RollbackStartedAt.IsZero() {
		d.rollouts().RolledBack(d.Now().Sub(st.RollbackStartedAt))
	}
	st.State = lifecycle.RolloutRolledBack
	if err := quarantine(ctx, *d, u.svc.Name, u.to, &lifecycle.Quarantine{Reason: st.Reason, At: d.Now(), Rollout: r.op.ID}); err != nil {
		return err
	}
	if err := saveRollout(ctx, d, r, "rolled back: "+st.Reason); err != nil {
		return err
	}
	_, err := d.Writer.Mutate(ctx, u.svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.Maintenance = false
		s.PreviousVersion = nil
		s.Status = lifecycle.StatusBusy
		s.RolloutControl = nil
		if r.op.Params.Automatic {
			s.UpgradeBlockedFor = u.to
		}
		s.ErrorDetails = append(lifecycle.WithoutType(s.ErrorDetails, lifecycle.ErrTypeInstall), lifecycle.ErrorDetail{Type: lifecycle.ErrTypeInstall, Severity: lifecycle.SeverityError,
			Message: fmt.Sprintf("the rollout of %s was rolled back and the version quarantined: %s", u.to, st.Reason)})
		return nil
	})
	if err != nil {
		return err
	}
	return steps.RefreshStatus(ctx, d.Repo, d.Writer, u.svc.ID)
}

// quarantine marks a registered version (q nil: clears it).
func quarantine(ctx context.Context, d Deps, name, version string, q *lifecycle.Quarantine) error {
	return d.Writer.Update(ctx, func(tx lifecycle.Tx) error {
		entries, err := tx.Catalog(name)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Version == version {
				e.Quarantine = q
				return tx.PutCatalog(e)
			}
		}
		return fmt.Errorf("version %s of %s is not registered: %w", version, name, lifecycle.ErrNotFound)
	})
}

// putCatalog enters a version in the catalog, keeping the quarantine an
// earlier entry of it carries: registering a version again does not clear
// it (an administrator does).
func putCatalog(tx lifecycle.Tx, e *lifecycle.CatalogEntry) error {
	entries, err := tx.Catalog(e.Name)
	if err != nil {
		return err
	}
	for _, old := range entries {
		if old.Version == e.Version && old.Quarantine != nil && e.Quarantine == nil {
			e.Quarantine = old.Quarantine
		}
	}
	return tx.PutCatalog(e)
}
