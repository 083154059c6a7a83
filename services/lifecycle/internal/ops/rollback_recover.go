package ops

import (
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// A stuck rollout (its own rollback failed for good, or a wave got stuck
// after moving targets) is recovered by POST /rollback, as a stuck
// upgrade is. The rollout ended in failure, so its version is quarantined
// as its own rolled-back step would have done; the rollout shows
// RollingBack while the rollback that recovers it runs, and RolledBack
// once that rollback has handed every resource back (the service's
// summary and GET …/rollout alike, as the history says).

// recoverStuck closes the stuck upgrade or rollout that the rollback rb
// takes over, in rb's transaction.
func recoverStuck(tx lifecycle.Tx, d *Deps, s *lifecycle.Service, stuck, rb *lifecycle.Operation) error {
	stuck.Outcome = lifecycle.OutcomeRolledBack
	stuck.FinishedAt = d.Now()
	if stuck.Type == lifecycle.OpRollout && stuck.Rollout != nil {
		st := stuck.Rollout
		why := fmt.Sprintf("recovered from stuck rollout %s (stuck at step %s) by rollback %s requested by %s",
			stuck.ID, stuckStep(stuck), rb.ID, nonEmptyStr(rb.RequestedBy, "an administrator"))
		if st.Reason != "" {
			why += "; the rollout failed: " + st.Reason
		}
		q := &lifecycle.Quarantine{Reason: why, At: d.Now(), Rollout: stuck.ID}
		if err := quarantineIfNot(tx, s.Name, stuck.ToVersion, q); err != nil {
			return err
		}
		st.State, st.Reason = lifecycle.RolloutRollingBack, why
		s.Rollout = fleet.Summary(stuck.ID, st)
	}
	return tx.PutOperation(stuck)
}

// stuckStep names the step an operation got stuck at.
func stuckStep(op *lifecycle.Operation) string {
	for _, s := range op.Steps {
		if s.Status == lifecycle.StepFailed {
			return s.Name
		}
	}
	return "(none recorded)"
}

// quarantineIfNot quarantines a registered version unless it already is
// (the earlier quarantine, e.g. of an automatic upgrade, stays). A
// version no longer in the catalog has nothing to mark: an upgrade to it
// must register it again.
func quarantineIfNot(tx lifecycle.Tx, name, version string, q *lifecycle.Quarantine) error {
	entries, err := tx.Catalog(name)
	if err != nil {
		return fmt.Errorf("quarantine version %s of %s: %w", version, name, err)
	}
	for _, e := range entries {
		if e.Version == version && e.Quarantine == nil {
			e.Quarantine = q
			return tx.PutCatalog(e)
		}
	}
	return nil
}

// endRecoveredRollout: once the rollback rb that recovered a stuck rollout
// has handed every resource back, the rollout is RolledBack, its moved
// targets (and the waves rolling back) back on its previous version.
func endRecoveredRollout(tx lifecycle.Tx, s *lifecycle.Service, rb *lifecycle.Operation) error {
	if s.Rollout == nil || s.Rollout.State != lifecycle.RolloutRollingBack || s.Rollout.OperationID == s.ActiveOperation {
		return nil
	}
	ro, err := tx.Operation(s.ID, s.Rollout.OperationID)
	if err != nil {
		return fmt.Errorf("read the rollout %s that rollback %s recovers: %w", s.Rollout.OperationID, rb.ID, err)
	}
	if ro.Outcome != lifecycle.OutcomeRolledBack || ro.Rollout == nil {
		return nil
	}
	st := ro.Rollout
	st.State = lifecycle.RolloutRolledBack
	for i := range st.Targets {
		t := &st.Targets[i]
		if !t.MovedAt.IsZero() && t.State != lifecycle.TargetRolledBack {
			t.State, t.Version = lifecycle.TargetRolledBack, st.FromVersion
			t.Message = "handed back to " + st.FromVersion + " by rollback " + rb.ID
		}
	}
	for i := range st.Waves {
		if st.Waves[i].State == "RollingBack" {
			st.Waves[i].State = "RolledBack"
		}
	}
	s.Rollout = fleet.Summary(ro.ID, st)
	return tx.PutOperation(ro)
}
