package ops

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/version"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Rollback: the failed version goes into maintenance, the previous
// version's resources are restored (new-version resources removed,
// transferred ones handed back and re-applied, removed originals
// recreated), the service points at it again.
var rollbackOp = operation{
	typ: lifecycle.OpRollback,
	steps: []step{
		{"maintenance", rollbackMaintenance},
		{"resources", rollbackResources},
		{"cleanup", rollbackCleanup},
	},
	onFailure: func(svc *lifecycle.Service, _ *lifecycle.Operation, _ string) {
		svc.Status = lifecycle.StatusUnhealthy
		svc.Maintenance = false
	},
}

// SupervisorServiceDowngradeWorkaround is seed 002's workaround, quoted in
// every refused rollback.
const SupervisorServiceDowngradeWorkaround = "Once a SupervisorService has been successfully installed on a Supervisor cluster it cannot be downgraded " +
	"(Carvel kapp-controller does not support package downgrades, and data migrations may be irreversible). " +
	"Workaround: 1. delete the service completely; 2. reinstall the previous version from scratch; 3. restore data from a backup taken before the upgrade."

// Rollback restores a previous version: by default the last known good
// one. It may take over a stuck or failed upgrade.
func (r *Runner) Rollback(ctx context.Context, id, targetVersion, by string) (*lifecycle.Service, error) {
	if err := lifecycle.CheckID(id); err != nil {
		return nil, err
	}
	svc, err := r.d.Repo.Service(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := refusePaused(svc); err != nil {
		return nil, err
	}
	if abandoned, err := abandonStuckChecks(ctx, &r.d, svc, by); abandoned != nil || err != nil {
		return abandoned, err
	}
	prev := svc.PreviousVersion
	if prev == nil {
		return nil, fmt.Errorf("service %s has no previous version to roll back to (it was never upgraded): %w", id, lifecycle.ErrInvalidArgument)
	}
	if targetVersion == "" {
		targetVersion = prev.Version
	}
	if targetVersion != prev.Version {
		return nil, fmt.Errorf("cannot roll back %s to version %s: the version it can return to is %s (the one the last upgrade replaced): %w",
			svc.Name, targetVersion, prev.Version, lifecycle.ErrInvalidArgument)
	}
	if svc.Version == prev.Version {
		return nil, fmt.Errorf("version %s is already the installed version: %w", prev.Version, lifecycle.ErrInvalidArgument)
	}
	if err := verifyDigest(&r.d, svc, prev.Version, prev.Digest); err != nil {
		return nil, fmt.Errorf("rollback refused: %w", err)
	}
	if err := checkSupervisorServiceDowngrade(ctx, &r.d, svc, prev); err != nil {
		return nil, err
	}
	var op *lifecycle.Operation
	out, err := r.d.Writer.Mutate(ctx, id, func(tx lifecycle.Tx, s *lifecycle.Service) error {
		op = nil
		if s.LifecycleState == lifecycle.StateDecommissioned {
			return fmt.Errorf("service %s is being deleted: %w", id, lifecycle.ErrConflict)
		}
		if err := refusePaused(s); err != nil {
			return err
		}
		op = rollbackOp.start(&r.d, s, by, lifecycle.OperationParams{TargetVersion: prev.Version, TargetDigest: prev.Digest, Phase: lifecycle.PhaseUpgrading})
		if s.ActiveOperation != "" {
			running, err := tx.Operation(s.ID, s.ActiveOperation)
			// Only a stuck upgrade (or rollout: an upgrade in waves) can
			// be rolled back while it is active.
			upgrade := running != nil && (running.Type == lifecycle.OpUpgrade || running.Type == lifecycle.OpRollout)
			if err == nil && (!upgrade || running.Outcome != lifecycle.OutcomeStuck) {
				return fmt.Errorf("service %s: a %s operation is in progress (%s): %w", id, running.Type, running.ID, lifecycle.ErrConflict)
			}
			if err == nil {
				if err := recoverStuck(tx, &r.d, s, running, op); err != nil {
					return err
				}
			}
		}
		op.ToVersion = prev.Version
		running(s, op)
		s.Phase = lifecycle.PhaseUpgrading
		return tx.PutOperation(op)
	})
	if err != nil {
		return nil, err
	}
	r.engine.Cancel(id)
	r.enqueue(ctx, op)
	return out, nil
}

// refusePaused refuses a rollback of a paused service (decided, as for
// its upgrade: docs/decisions.md, "Lifecycle semantics").
func refusePaused(svc *lifecycle.Service) error {
	if svc.LifecycleState == lifecycle.StatePaused {
		return fmt.Errorf("service %s is paused: resume it before rolling back: %w", svc.NameOrID(), lifecycle.ErrConflict)
	}
	return nil
}

// abandonStuckChecks ends an upgrade stuck before maintenance: nothing
// changed yet, so rolling back is just giving it up.
func abandonStuckChecks(ctx context.Context, d *Deps, svc *lifecycle.Service, by string) (*lifecycle.Service, error) {
	if svc.ActiveOperation == "" {
		return nil, nil
	}
	op, err := d.Repo.Operation(ctx, svc.ID, svc.ActiveOperation)
	if err != nil || op.Type != lifecycle.OpUpgrade || op.Outcome != lifecycle.OutcomeStuck || svc.Version != op.FromVersion || svc.Maintenance {
		return nil, nil
	}
	return d.Writer.Mutate(ctx, svc.ID, func(tx lifecycle.Tx, s *lifecycle.Service) error {
		if s.ActiveOperation != op.ID {
			return fmt.Errorf("service %s changed while rolling back: %w", svc.ID, lifecycle.ErrConflict)
		}
		op.Outcome = lifecycle.OutcomeRolledBack
		op.FinishedAt = d.Now()
		s.ActiveOperation = ""
		s.Phase = ""
		s.Status = lifecycle.StatusBusy
		s.ErrorDetails = append(s.ErrorDetails, lifecycle.ErrorDetail{Type: lifecycle.ErrTypeInstall, Severity: lifecycle.SeverityInfo,
			Message: fmt.Sprintf("the upgrade to %s, stuck before maintenance, was abandoned by %s; %s stays installed", op.ToVersion, nonEmptyStr(by, "a rollback"), s.Version)})
		return tx.PutOperation(op)
	})
}

func nonEmptyStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// checkSupervisorServiceDowngrade refuses a rollback that would move a
// successfully installed SupervisorService to an older package version.
func checkSupervisorServiceDowngrade(ctx context.Context, d *Deps, svc *lifecycle.Service, prev *lifecycle.VersionRef) error {
	res, err := d.Repo.Resources(ctx, svc.ID)
	if err != nil {
		return err
	}
	pb, err := d.Bundles.Load(prev.Digest)
	if err != nil {
		return err
	}
	probe := svc.Clone()
	probe.Version, probe.Digest, probe.Values = prev.Version, prev.Digest, prev.Values
	rend, err := steps.Render(ctx, d.Ports.Render(), probe, pb, lifecycle.RenderInput{})
	if err != nil {
		return fmt.Errorf("render version %s to check the rollback: %w", prev.Version, err)
	}
	previous := map[string]string{}
	for _, d := range rend.Resources {
		if d.Kind != "SupervisorService" {
			continue
		}
		var doc map[string]any
		if yaml.Unmarshal(d.YAML, &doc) == nil {
			previous[d.Supervisor+"/"+packageRef(doc)] = packageVersionOf(doc)
		}
	}
	var refused []string
	for _, r := range res {
		if r.Kind != "SupervisorService" || r.OwnerVersion == prev.Version || r.Status != target.StatusHealthy {
			continue
		}
		installed := packageVersionOf(r.Doc)
		old, ok := previous[r.Supervisor+"/"+packageRef(r.Doc)]
		if ok && installed != "" && old != "" && version.Compare(old, installed) < 0 {
			refused = append(refused, fmt.Sprintf("SupervisorService %s on %s is installed at package version %s and version %s would downgrade it to %s",
				r.Name, r.Supervisor, installed, prev.Version, old))
		}
	}
	if len(refused) > 0 {
		return fmt.Errorf("rollback refused: %s. %s: %w", strings.Join(refused, "; "), SupervisorServiceDowngradeWorkaround, lifecycle.ErrFailedPrecondition)
	}
	return nil
}

func packageRef(doc map[string]any) string {
	return stringAt(doc, "spec", "package", "spec", "refName")
}

func packageVersionOf(doc map[string]any) string {
	return stringAt(doc, "spec", "package", "spec", "version")
}

func stringAt(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = mm[p]
	}
	if cur == nil {
		return ""
	}
	return fmt.Sprint(cur)
}

// rollbackMaintenance puts the failed version into maintenance.
func rollbackMaintenance(ctx context.Context, d *Deps, r *run) error {
	_, err := d.Writer.Mutate(ctx, r.svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.Maintenance = true
		s.Status = lifecycle.StatusMaintenance
		s.Phase = lifecycle.PhaseUpgrading
		return nil
	})
	return err
}

// rollbackResources restores the previous version's resources.
func rollbackResources(ctx context.Context, d *Deps, r *run) error {
	svc := r.svc
	if svc.PreviousVersion == nil && svc.Version == r.op.ToVersion {
		return nil // finished before a restart
	}
	prev := svc.PreviousVersion
	if prev == nil {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, fmt.Errorf("the previous version record is gone"))
	}
	pb, err := d.Bundles.Load(prev.Digest)
	if err != nil {
		return err
	}
	if err := verifyLive(d, svc, prev.Version, pb); err != nil {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, err)
	}
	probe := svc.Clone()
	probe.Version, probe.Digest, probe.Values = prev.Version, prev.Digest, prev.Values
	rend, err := steps.RenderFor(ctx, d.Ports.Render(), d.Writer, r.cache(), probe, pb)
	if err != nil {
		return err
	}
	return steps.MoveResources(ctx, d.Ports.Apply(), probe, rend, prev.Version, "rollback")
}

// rollbackCleanup points the service at the previous version again and
// ends maintenance; the controllers take over. A stuck rollout the
// rollback recovered is RolledBack from here (rollback_recover.go).
func rollbackCleanup(ctx context.Context, d *Deps, r *run) error {
	_, err := d.Writer.Mutate(ctx, r.svc.ID, func(tx lifecycle.Tx, s *lifecycle.Service) error {
		if prev := s.PreviousVersion; prev != nil && s.Version != prev.Version {
			// Automatic upgrades do not pick the version rolled back from
			// until an administrator clears it.
			s.UpgradeBlockedFor = s.Version
			s.Version, s.Digest, s.Source, s.Values = prev.Version, prev.Digest, prev.Source, prev.Values
		}
		s.PreviousVersion = nil
		s.Maintenance = false
		s.Status = lifecycle.StatusBusy
		return endRecoveredRollout(tx, s, r.op)
	})
	if err != nil {
		return err
	}
	return steps.RefreshStatus(ctx, d.Repo, d.Writer, r.svc.ID)
}
