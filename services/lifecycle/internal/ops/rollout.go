package ops

import (
	"context"
	"fmt"
	"slices"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// Rollout: an upgrade that moves a service's Supervisors in waves. It
// downloads and checks the new version as an upgrade does, lays the
// waves out ("plan" adds a step per wave before "promote"), freezes the
// service, then runs each wave (rollout_wave.go): its gates, its moves
// (a concurrency limit, maintenance windows), and the new generation
// Healthy for the soak time. On failure it turns to a progressive
// rollback in reverse wave order (rollout_back.go) and quarantines the
// version; otherwise "promote" points the service at the new version.
// Step names are journaled: wave-N and rollback-wave-N are found by name
// (rolloutStepNamed), so a process killed at any step resumes there.
var rolloutOp = operation{
	typ: lifecycle.OpRollout,
	steps: []step{
		{"download", upgradeDownload},
		{"configuration", withVersions(upgradeConfiguration)},
		{"plan", withVersions(rolloutPlan)},
		{"maintenance", withVersions(upgradeMaintenance)},
		{"promote", withVersions(rolloutPromote)},
	},
	dynamic:   rolloutStepNamed,
	onFailure: onRolloutFailure,
}

// rolloutStepNamed finds the steps a rollout adds as it runs.
func rolloutStepNamed(name string) (step, bool) {
	var k int
	if n, err := fmt.Sscanf(name, "wave-%d", &k); err == nil && n == 1 && k >= 1 {
		return step{name, withVersions(runWave(k - 1))}, true
	}
	if n, err := fmt.Sscanf(name, "rollback-wave-%d", &k); err == nil && n == 1 && k >= 1 {
		return step{name, withVersions(rollbackWave(k - 1))}, true
	}
	if name == "rolled-back" {
		return step{name, withVersions(rolloutRolledBack)}, true
	}
	return step{}, false
}

// startRollout records a rollout on svc (inside a transaction).
func startRollout(d *Deps, svc *lifecycle.Service, source, digest string, automatic bool, by string, strategy *lifecycle.RolloutStrategy) *lifecycle.Operation {
	op := rolloutOp.start(d, svc, by, lifecycle.OperationParams{Source: source, TargetDigest: digest, Automatic: automatic, Phase: svc.Phase, Strategy: strategy})
	svc.Phase = lifecycle.PhaseUpgrading
	svc.ErrorDetails = lifecycle.WithoutType(lifecycle.WithoutType(svc.ErrorDetails, lifecycle.ErrTypeInstall), lifecycle.ErrTypeDownload)
	svc.RolloutControl = &lifecycle.RolloutControl{OperationID: op.ID}
	return op
}

// rolloutPlan assigns every Supervisor the service runs on (at either
// version) to its wave, and every resource that is not on one Supervisor
// to the wave it moves with; it adds a step per wave.
func rolloutPlan(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error {
	if r.op.Rollout != nil {
		return nil // planned before a restart
	}
	strategy := r.op.Params.Strategy
	if strategy == nil {
		return lifecycle.Blocked(lifecycle.ErrTypeConfiguration, fmt.Errorf("the rollout has no strategy"))
	}
	rend, err := steps.RenderFor(ctx, d.Ports.Render(), d.Writer, r.cache(), u.next, u.nb)
	if err != nil {
		return err
	}
	inv, err := d.Repo.Inventory(ctx)
	if err != nil {
		return err
	}
	have, err := d.Repo.Resources(ctx, u.svc.ID)
	if err != nil {
		return err
	}
	want, err := rend.Place(u.next, u.to, d.Now())
	if err != nil {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, err)
	}
	sups := rend.Supervisors()
	for _, res := range append(slices.Clone(have), want...) {
		if res.Supervisor != "" && !slices.Contains(sups, res.Supervisor) {
			sups = append(sups, res.Supervisor)
		}
	}
	waves, err := fleet.Assign(strategy, inv, sups)
	if err != nil {
		return lifecycle.Blocked(lifecycle.ErrTypeConfiguration, err)
	}
	r.op.Rollout = fleet.NewState(strategy, waves, inv, append(have, want...), u.old.Version, u.to)
	at := slices.IndexFunc(r.op.Steps, func(s lifecycle.Step) bool { return s.Name == "promote" })
	var added []lifecycle.Step
	for i := range waves {
		added = append(added, lifecycle.Step{Name: fmt.Sprintf("wave-%d", i+1), Status: lifecycle.StepPending})
	}
	r.op.Steps = slices.Insert(r.op.Steps, at, added...)
	return saveRollout(ctx, d, r, "")
}

// saveRollout journals the rollout on its operation and shows its summary
// (and, with message, its progress) on the service.
func saveRollout(ctx context.Context, d *Deps, r *run, message string) error {
	st := r.op.Rollout
	sum := fleet.Summary(r.op.ID, st)
	err := d.Writer.PutOperation(ctx, r.op, func(svc *lifecycle.Service) bool {
		if svc.ActiveOperation != r.op.ID {
			return false
		}
		svc.Rollout = sum
		if message != "" && svc.Progress != nil && svc.Progress.OperationID == r.op.ID {
			svc.Progress.Message = message
			if sum.Total > 0 {
				svc.Progress.Percent = max(svc.Progress.Percent, sum.Done*100/sum.Total)
			}
		}
		return true
	})
	if err == nil {
		d.rollouts().RolloutSaved(rolloutKey(r.op), st)
	}
	return err
}

// rolloutPromote points the service at the new version once every wave
// is done; the controllers take over.
func rolloutPromote(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error {
	st := r.op.Rollout
	st.State = lifecycle.RolloutSucceeded
	st.Wave = len(st.Waves)
	if err := saveRollout(ctx, d, r, "all waves done"); err != nil {
		return err
	}
	_, err := d.Writer.Mutate(ctx, u.svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.Version, s.Digest, s.Source = u.to, u.nb.Digest, u.nb.Source
		acceptOnSuccess(s, r.op)
		s.Maintenance = false
		s.Status = lifecycle.StatusBusy
		s.UpgradeBlockedFor = ""
		s.RolloutControl = nil
		return nil
	})
	if err != nil {
		return err
	}
	return steps.RefreshStatus(ctx, d.Repo, d.Writer, u.svc.ID)
}

// onRolloutFailure: a rollout that failed outright (a step failed for
// good, or got stuck) before moving anything leaves the service as it
// was; one that had moved targets is a partial upgrade: the service
// points at the new version, Unhealthy and in maintenance, so POST
// /rollback takes every target back (those never moved are current
// already), or sending the same source again retries it at once.
func onRolloutFailure(svc *lifecycle.Service, op *lifecycle.Operation, outcome string) {
	svc.RolloutControl = nil
	if svc.Rollout != nil {
		svc.Rollout.State = lifecycle.RolloutFailed
	}
	if op.Params.Automatic {
		svc.UpgradeBlockedFor = op.ToVersion
	}
	moved := false
	if op.Rollout != nil {
		for _, t := range op.Rollout.Targets {
			moved = moved || !t.MovedAt.IsZero()
		}
	}
	if !moved && outcome != lifecycle.OutcomeStuck {
		svc.Maintenance = false
		svc.Phase = op.Params.Phase
		setStatusFromResourcesLater(svc)
		return
	}
	if moved && svc.PreviousVersion != nil && op.Params.TargetDigest != "" {
		svc.Version, svc.Digest = op.ToVersion, op.Params.TargetDigest
		if op.Params.Source != "" {
			svc.Source = op.Params.Source
		}
		// Partial, as an upgrade's: it stays in maintenance (maintenance.go).
		svc.Maintenance = true
		svc.Status = lifecycle.StatusUnhealthy
		svc.ErrorDetails = append(svc.ErrorDetails, maintenanceNote(svc, op))
		return
	}
	svc.Maintenance = false
	svc.Status = lifecycle.StatusUnhealthy
}
