package ops

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// Upgrade: PATCH/PUT source, or autoUpgrade with a newer version in the
// catalog. The crash test stops the binary before and after every step, so
// the step names, their order and what each journals are part of the
// contract (failpoints name them: upgrade/resources:after).
//
// The first five steps only read: any ERROR there means the upgrade does
// not start and the current version stays as it was.
var upgradeOp = operation{
	typ: lifecycle.OpUpgrade,
	steps: []step{
		{"download", upgradeDownload},
		{"configuration", withVersions(upgradeConfiguration)},
		{"compatibility", withVersions(upgradeEvaluate)},
		{"precheck-hook", withVersions(upgradeHook)},
		{"prechecks", withVersions(upgradePrechecks)},
		{"maintenance", withVersions(upgradeMaintenance)},
		{"resources", withVersions(upgradeResources)},
		{"cleanup", withVersions(upgradeCleanup)},
	},
	dynamic:   inactiveUpgradeStep,
	onFailure: onUpgradeFailure,
}

// startUpgrade records an upgrade operation on svc (inside a transaction).
func startUpgrade(d *Deps, svc *lifecycle.Service, source, digest string, automatic bool, by string) *lifecycle.Operation {
	op := upgradeOp.start(d, svc, by, lifecycle.OperationParams{Source: source, TargetDigest: digest, Automatic: automatic, Phase: svc.Phase})
	svc.Phase = lifecycle.PhaseUpgrading
	svc.ErrorDetails = lifecycle.WithoutType(lifecycle.WithoutType(svc.ErrorDetails, lifecycle.ErrTypeInstall), lifecycle.ErrTypeDownload)
	return op
}

// refuseKnownVersion refuses, before an upgrade starts, a source whose
// version the catalog already knows to be the installed one or older: no
// download is needed to tell.
func refuseKnownVersion(ctx context.Context, d *Deps, svc *lifecycle.Service, source string) error {
	if svc.Name == "" || svc.Version == "" {
		return nil
	}
	entries, err := d.Repo.Catalog(ctx, svc.Name)
	if err != nil {
		return fmt.Errorf("read the catalog of %s: %w", svc.Name, err)
	}
	for _, e := range entries {
		if e.Source == source {
			if err := steps.CheckTargetVersion(svc, e.Version); err != nil {
				return fmt.Errorf("%w: %w", err, lifecycle.ErrInvalidArgument)
			}
			if q := e.Quarantine; q != nil {
				return fmt.Errorf("%w: %w", quarantined(e), lifecycle.ErrFailedPrecondition)
			}
			return nil
		}
	}
	return nil
}

// quarantined says why a version may not be upgraded to.
func quarantined(e *lifecycle.CatalogEntry) error {
	q := e.Quarantine
	return fmt.Errorf("version %s of %s is quarantined since %s: %s; an administrator clears it first (DELETE /v2/vcf-service-versions/%s/%s/quarantine, or vcfctl version clear)",
		e.Version, e.Name, q.At.Format(time.RFC3339), q.Reason, e.Name, e.Version)
}

// refuseQuarantined refuses a download that turned out to be a
// quarantined version.
func refuseQuarantined(ctx context.Context, d *Deps, name, version string) error {
	entries, err := d.Repo.Catalog(ctx, name)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.Version == version && e.Quarantine != nil {
			return lifecycle.Blocked(lifecycle.ErrTypeDownload, quarantined(e))
		}
	}
	return nil
}

// upgradeTarget returns the bundle an upgrade moves to.
func upgradeTarget(ctx context.Context, d *Deps, r *run) (*bundle.Bundle, error) {
	if r.op.Params.TargetDigest != "" {
		if b, err := d.Bundles.Load(r.op.Params.TargetDigest); err == nil {
			return b, nil
		}
	}
	if r.op.Params.Source == "" {
		return nil, lifecycle.Blocked(lifecycle.ErrTypeDownload, fmt.Errorf("the upgrade names neither a source nor a stored bundle"))
	}
	return steps.Fetch(ctx, d.Bundles, d.Writer, r.op, r.op.Params.Source)
}

// upgradeDownload fetches (or loads) the new bundle, checks it is a newer
// version of the same service, validates it and enters it in the catalog.
func upgradeDownload(ctx context.Context, d *Deps, r *run) error {
	svc := r.svc
	b, err := upgradeTarget(ctx, d, r)
	if err != nil {
		return err
	}
	v, err := steps.CheckTargetBundle(svc, b)
	if err != nil {
		return err
	}
	// Known from here: a refusal below names the version in the history
	// (and an automatic upgrade does not pick it again).
	r.op.ToVersion = v
	if want := r.op.Params.TargetDigest; r.op.Params.PlanID != "" && want != "" && b.Digest != want {
		return lifecycle.Blocked(lifecycle.ErrTypeDownload, fmt.Errorf("the bundle at %s is %s, not the %s plan %s was made for: make a new plan", r.op.Params.Source, b.Digest, want, r.op.Params.PlanID))
	}
	if err := refuseQuarantined(ctx, d, svc.Name, v); err != nil {
		return err
	}
	warnings, err := steps.ValidateBundle(ctx, d.Ports.Render(), d.Ports.Peers.Compatibility, svc, b)
	if err != nil {
		return err
	}
	r.note(warnings) // the new bundle's static warnings (they reach errorDetails when the upgrade ends)
	if err := verifyLive(d, svc, v, b); err != nil {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, err)
	}
	if err := checkUpgradeAcceptance(ctx, d, r, v, b); err != nil {
		return err
	}
	r.op.ToVersion, r.op.Params.TargetDigest = v, b.Digest
	return d.Writer.Update(ctx, func(tx lifecycle.Tx) error {
		if err := putCatalog(tx, &lifecycle.CatalogEntry{Name: svc.Name, Version: v, Source: b.Source, Digest: b.Digest,
			Status: lifecycle.StatusReady, RegisteredAt: d.Now(), Constraints: steps.CatalogConstraints(b)}); err != nil {
			return err
		}
		return tx.PutOperation(r.op)
	})
}

// upgradeVersions is what the steps after download work on: the installed
// version (old, its bundle ob) and the target (next, its bundle nb).
type upgradeVersions struct {
	svc, old, next *lifecycle.Service
	ob, nb         *bundle.Bundle
	to             string
}

// withVersions runs a step that works on the versions the upgrade moves
// between, loaded afresh for every run (a restarted run loads them again).
func withVersions(fn func(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error) func(context.Context, *Deps, *run) error {
	return func(ctx context.Context, d *Deps, r *run) error {
		u, err := loadVersions(d, r)
		if err != nil {
			return err
		}
		return fn(ctx, d, r, u)
	}
}

func loadVersions(d *Deps, r *run) (*upgradeVersions, error) {
	svc := r.svc
	nb, err := d.Bundles.Load(r.op.Params.TargetDigest)
	if err != nil {
		return nil, fmt.Errorf("load the new bundle: %w", err)
	}
	// Before maintenance the installed version is svc's; from then on the
	// service points at the new version and PreviousVersion at the old.
	old := svc
	if svc.PreviousVersion != nil && svc.Version == r.op.ToVersion {
		old = svc.Clone()
		old.Version, old.Digest, old.Values = svc.PreviousVersion.Version, svc.PreviousVersion.Digest, svc.PreviousVersion.Values
	}
	ob, err := steps.LoadBundle(d.Bundles, old)
	if err != nil {
		return nil, err
	}
	next := old.Clone()
	next.Version, next.Digest = r.op.ToVersion, nb.Digest
	return &upgradeVersions{svc: svc, old: old, next: next, ob: ob, nb: nb, to: r.op.ToVersion}, nil
}

// upgradeConfiguration: the current values must fit the new schema.
func upgradeConfiguration(ctx context.Context, d *Deps, _ *run, u *upgradeVersions) error {
	if errs := steps.CheckConfiguration(ctx, d.Ports.Render(), u.old, u.nb); len(errs) > 0 {
		return lifecycle.Blocked(lifecycle.ErrTypeConfiguration, fmt.Errorf("the current configuration does not fit version %s: %s", u.to, strings.Join(errs, "; ")))
	}
	return nil
}

// upgradeEvaluate: the compatibility service's verdict on the jump.
func upgradeEvaluate(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error {
	rend, err := steps.RenderFor(ctx, d.Ports.Render(), d.Writer, r.cache(), u.next, u.nb)
	if err != nil {
		return err
	}
	results, err := steps.UpgradeCompatibility(ctx, d.Ports.Check(), u.old, u.ob, u.nb, u.to, rend)
	if err != nil {
		return err
	}
	if results, err = overrideErrors(ctx, d, r, results); err != nil {
		return err
	}
	notes, err := steps.NoteResults(ctx, d.Writer, u.svc.ID, results, "compatibility check failed")
	r.note(notes)
	return err
}

// upgradeHook: the service's own pre-check hook.
func upgradeHook(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error {
	hook, err := steps.RunHook(ctx, d.Ports.Hook(), u.old, u.ob, u.nb, u.to)
	if err != nil {
		return err
	}
	results, err := overrideErrors(ctx, d, r, hook.Results)
	if err != nil {
		return err
	}
	notes, err := steps.NoteResults(ctx, d.Writer, u.svc.ID, results, "the pre-check hook reported errors")
	r.note(notes)
	if err != nil {
		return err
	}
	if hook.Failure != "" {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, fmt.Errorf("the pre-check hook failed: %s", hook.Failure))
	}
	return nil
}

// upgradePrechecks: the dynamic pre-checks of the new version's resources.
func upgradePrechecks(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error {
	rend, err := steps.RenderFor(ctx, d.Ports.Render(), d.Writer, r.cache(), u.next, u.nb)
	if err != nil {
		return err
	}
	return steps.Prechecks(ctx, d.Ports.Precheck(), u.next, u.nb, rend, u.to)
}

// upgradeMaintenance freezes the service and keeps the version it leaves
// for a rollback. The new version's signatures are verified again first:
// the trusted keys may have changed since the download (a restart).
func upgradeMaintenance(ctx context.Context, d *Deps, _ *run, u *upgradeVersions) error {
	if err := verifyLive(d, u.svc, u.to, u.nb); err != nil {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, err)
	}
	_, err := d.Writer.Mutate(ctx, u.svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		if s.Version != u.to {
			s.PreviousVersion = &lifecycle.VersionRef{Version: s.Version, Digest: s.Digest, Source: s.Source, Values: s.Values}
		}
		s.Maintenance = true
		s.Status = lifecycle.StatusMaintenance
		s.Phase = lifecycle.PhaseUpgrading
		return nil
	})
	return err
}

// upgradeResources points the service at the new version and hands the
// resources over to it.
func upgradeResources(ctx context.Context, d *Deps, r *run, u *upgradeVersions) error {
	rend, err := steps.RenderFor(ctx, d.Ports.Render(), d.Writer, r.cache(), u.next, u.nb)
	if err != nil {
		return err
	}
	if _, err := d.Writer.Mutate(ctx, u.svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.Version, s.Digest, s.Source = u.to, u.nb.Digest, u.nb.Source
		acceptOnSuccess(s, r.op)
		return nil
	}); err != nil {
		return err
	}
	return steps.MoveResources(ctx, d.Ports.Apply(), u.next, rend, u.to, "upgrade")
}

// upgradeCleanup ends maintenance; the controllers take over.
func upgradeCleanup(ctx context.Context, d *Deps, _ *run, u *upgradeVersions) error {
	_, err := d.Writer.Mutate(ctx, u.svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.Maintenance = false
		s.Status = lifecycle.StatusBusy
		s.UpgradeBlockedFor = ""
		return nil
	})
	if err != nil {
		return err
	}
	return steps.RefreshStatus(ctx, d.Repo, d.Writer, u.svc.ID)
}

// onUpgradeFailure sets the service's status after a failed upgrade. Before
// maintenance nothing changed: the current version stays as it was. After,
// the upgrade is partial: Unhealthy and still in maintenance, to fix and
// retry or roll back.
func onUpgradeFailure(svc *lifecycle.Service, op *lifecycle.Operation, outcome string) {
	partial := false
	for _, s := range op.Steps {
		if (s.Name == "resources" || s.Name == "cleanup") && (s.Status == lifecycle.StepFailed || s.Status == lifecycle.StepSucceeded) {
			partial = true
		}
	}
	if op.Params.Automatic {
		svc.UpgradeBlockedFor = op.ToVersion
	}
	if svc.LifecycleState == lifecycle.StateInactive && op.Params.PriorStatus != "" {
		// Nothing was applied: the inactive service is as it was.
		svc.Maintenance = false
		svc.Phase = op.Params.Phase
		svc.Status = op.Params.PriorStatus
		return
	}
	if outcome == lifecycle.OutcomeStuck {
		svc.Status = lifecycle.StatusUnhealthy
		return
	}
	if !partial {
		svc.Maintenance = false
		svc.Phase = op.Params.Phase
		setStatusFromResourcesLater(svc)
		return
	}
	// Partial: the service stays in maintenance (maintenance.go).
	svc.Maintenance = true
	svc.Status = lifecycle.StatusUnhealthy
	svc.ErrorDetails = append(svc.ErrorDetails, maintenanceNote(svc, op))
}

// setStatusFromResourcesLater marks the service for the controllers to
// recompute its status (it was frozen during the checks).
func setStatusFromResourcesLater(svc *lifecycle.Service) {
	if svc.LifecycleState == lifecycle.StateActive && svc.Status == lifecycle.StatusMaintenance {
		svc.Status = lifecycle.StatusBusy
	}
}

// StartAutoUpgrade starts an automatic upgrade of a service to a
// registered version (the controllers decide when and to which). It does
// nothing when the service meanwhile got an operation or stopped asking.
func (r *Runner) StartAutoUpgrade(ctx context.Context, id string, to *lifecycle.CatalogEntry) error {
	svc, err := r.d.Repo.Service(ctx, id)
	if err != nil {
		return err
	}
	stored, err := r.d.Repo.RolloutStrategies(ctx)
	if err != nil {
		return err
	}
	strategy, err := fleet.Resolve(nil, svc.RolloutStrategy, stored)
	if err != nil {
		return err
	}
	var op *lifecycle.Operation
	_, err = r.d.Writer.Mutate(ctx, id, func(tx lifecycle.Tx, s *lifecycle.Service) error {
		op = nil
		// Only an active service that is not in maintenance upgrades by
		// itself (it may have been paused since the controllers looked).
		if s.ActiveOperation != "" || !s.AutoUpgrade || s.LifecycleState != lifecycle.StateActive || s.Maintenance {
			return nil
		}
		if strategy != nil {
			op = startRollout(&r.d, s, to.Source, to.Digest, true, "auto-upgrade", strategy)
		} else {
			op = startUpgrade(&r.d, s, to.Source, to.Digest, true, "auto-upgrade")
		}
		running(s, op)
		return tx.PutOperation(op)
	})
	if err != nil {
		return err
	}
	if op != nil {
		r.d.Log.Info("starting automatic upgrade", "service", id, "from", op.FromVersion, "to", to.Version)
		r.enqueue(ctx, op)
	}
	return nil
}
