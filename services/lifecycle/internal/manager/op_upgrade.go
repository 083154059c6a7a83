package manager

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/version"
)

// Upgrade: PATCH/PUT source, or autoUpgrade with a newer version in the
// catalog. The crash test stops the binary before and after every step, so
// the step names, their order and what each journals are part of the
// contract (failpoints name them: upgrade/resources:after).

// upgradeSteps, in order. The first five only read: any ERROR there means
// the upgrade does not start and the current version stays as it was.
var upgradeSteps = []string{"download", "configuration", "compatibility", "precheck-hook", "prechecks", "maintenance", "resources", "cleanup"}

var upgradeOperation = operationDef{
	run:       func(ctx context.Context, m *core, r *run, step string) error { return m.upgradeStep(ctx, r, step) },
	onFailure: onUpgradeFailure,
}

// upgradeStep runs one step of an upgrade, in upgradeSteps' order.
func (m *core) upgradeStep(ctx context.Context, r *run, name string) error {
	if name == "download" {
		return m.upgradeDownload(ctx, r)
	}
	u, err := m.upgradeVersions(r)
	if err != nil {
		return err
	}
	switch name {
	case "configuration":
		if errs := steps.CheckConfiguration(ctx, m.RenderPorts(), u.old, u.nb); len(errs) > 0 {
			return lifecycle.Blocked(lifecycle.ErrTypeConfiguration, fmt.Errorf("the current configuration does not fit version %s: %s", u.to, strings.Join(errs, "; ")))
		}
		return nil
	case "compatibility":
		return m.upgradeEvaluate(ctx, r, u)
	case "precheck-hook":
		return m.upgradeHook(ctx, u)
	case "prechecks":
		rend, err := steps.RenderFor(ctx, m.RenderPorts(), m.Store, r.cache(), u.next, u.nb)
		if err != nil {
			return err
		}
		return steps.Prechecks(ctx, m.PrecheckPorts(), u.next, u.nb, rend, u.to)
	case "maintenance":
		return m.upgradeMaintenance(ctx, u)
	case "resources":
		return m.upgradeResources(ctx, r, u)
	case "cleanup":
		return m.upgradeCleanup(ctx, u)
	}
	return fmt.Errorf("upgrade has no step %q", name)
}

// startUpgrade records an upgrade operation on svc (inside a transaction).
func (m *core) startUpgrade(svc *lifecycle.Service, source, digest string, automatic bool, by string) *lifecycle.Operation {
	op := m.newOperation(svc, lifecycle.OpUpgrade, by, lifecycle.OperationParams{Source: source, TargetDigest: digest, Automatic: automatic, Phase: svc.Phase}, upgradeSteps...)
	op.FromVersion = svc.Version
	svc.Phase = lifecycle.PhaseUpgrading
	svc.ErrorDetails = lifecycle.WithoutType(lifecycle.WithoutType(svc.ErrorDetails, lifecycle.ErrTypeInstall), lifecycle.ErrTypeDownload)
	return op
}

// upgradeTarget returns the bundle an upgrade moves to.
func (m *core) upgradeTarget(ctx context.Context, r *run) (*bundle.Bundle, error) {
	if r.op.Params.TargetDigest != "" {
		if b, err := m.Bundles.Load(r.op.Params.TargetDigest); err == nil {
			return b, nil
		}
	}
	if r.op.Params.Source == "" {
		return nil, lifecycle.Blocked(lifecycle.ErrTypeDownload, fmt.Errorf("the upgrade names neither a source nor a stored bundle"))
	}
	return steps.Fetch(ctx, m.Bundles, m, r.op, r.op.Params.Source)
}

// checkTargetBundle refuses bundles that are not a newer version of the
// same service.
func checkTargetBundle(svc *lifecycle.Service, b *bundle.Bundle) (string, error) {
	if b.Package.RefName != "" && b.Package.RefName != svc.Name {
		return "", lifecycle.Blocked(lifecycle.ErrTypeDownload, fmt.Errorf("the new bundle is %q, not a version of %q", b.Package.RefName, svc.Name))
	}
	v := b.Package.Version
	if v == "" {
		return "", lifecycle.Blocked(lifecycle.ErrTypeDownload, fmt.Errorf("the new bundle's package.yml has no spec.version"))
	}
	if err := checkTargetVersion(svc, v); err != nil {
		return "", lifecycle.Blocked(lifecycle.ErrTypeDownload, err)
	}
	return v, nil
}

// checkTargetVersion refuses an upgrade to the installed version or an
// older one.
func checkTargetVersion(svc *lifecycle.Service, v string) error {
	if v == svc.Version {
		return fmt.Errorf("version %s is already installed", v)
	}
	if version.Compare(v, svc.Version) < 0 {
		return fmt.Errorf("version %s is older than the installed %s: downgrades go through POST /rollback", v, svc.Version)
	}
	return nil
}

// refuseKnownVersion refuses, before an upgrade starts, a source whose
// version the catalog already knows to be the installed one or older: no
// download is needed to tell.
func (m *core) refuseKnownVersion(ctx context.Context, svc *lifecycle.Service, source string) error {
	if svc.Name == "" || svc.Version == "" {
		return nil
	}
	entries, err := m.Repo.Catalog(ctx, svc.Name)
	if err != nil {
		return fmt.Errorf("read the catalog of %s: %w", svc.Name, err)
	}
	for _, e := range entries {
		if e.Source == source {
			if err := checkTargetVersion(svc, e.Version); err != nil {
				return fmt.Errorf("%w: %w", err, lifecycle.ErrInvalidArgument)
			}
			return nil
		}
	}
	return nil
}

// upgradeDownload fetches (or loads) the new bundle, checks it is a newer
// version of the same service, validates it and enters it in the catalog.
func (m *core) upgradeDownload(ctx context.Context, r *run) error {
	svc := r.svc
	b, err := m.upgradeTarget(ctx, r)
	if err != nil {
		return err
	}
	v, err := checkTargetBundle(svc, b)
	if err != nil {
		return err
	}
	if _, err := steps.ValidateBundle(ctx, m.RenderPorts(), m.Peers.Compatibility, svc, b); err != nil {
		return err
	}
	r.op.ToVersion, r.op.Params.TargetDigest = v, b.Digest
	return m.Update(ctx, func(tx lifecycle.Tx) error {
		if err := tx.PutCatalog(&lifecycle.CatalogEntry{Name: svc.Name, Version: v, Source: b.Source, Digest: b.Digest,
			Status: lifecycle.StatusReady, RegisteredAt: m.now(), Constraints: catalogConstraints(b)}); err != nil {
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

func (m *core) upgradeVersions(r *run) (*upgradeVersions, error) {
	svc := r.svc
	nb, err := m.Bundles.Load(r.op.Params.TargetDigest)
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
	ob, err := steps.LoadBundle(m.Bundles, old)
	if err != nil {
		return nil, err
	}
	next := old.Clone()
	next.Version, next.Digest = r.op.ToVersion, nb.Digest
	return &upgradeVersions{svc: svc, old: old, next: next, ob: ob, nb: nb, to: r.op.ToVersion}, nil
}

// upgradeEvaluate: the compatibility service's verdict on the jump.
func (m *core) upgradeEvaluate(ctx context.Context, r *run, u *upgradeVersions) error {
	rend, err := steps.RenderFor(ctx, m.RenderPorts(), m.Store, r.cache(), u.next, u.nb)
	if err != nil {
		return err
	}
	results, err := steps.UpgradeCompatibility(ctx, m.CheckPorts(), u.old, u.ob, u.nb, u.to, rend)
	if err != nil {
		return err
	}
	return steps.NoteResults(ctx, m.Store, u.svc.ID, results, "compatibility check failed")
}

// upgradeHook: the service's own pre-check hook.
func (m *core) upgradeHook(ctx context.Context, u *upgradeVersions) error {
	hook, err := steps.RunHook(ctx, m.HookPorts(), u.old, u.ob, u.nb, u.to)
	if err != nil {
		return err
	}
	if err := steps.NoteResults(ctx, m.Store, u.svc.ID, hook.Results, "the pre-check hook reported errors"); err != nil {
		return err
	}
	if hook.Failure != "" {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, fmt.Errorf("the pre-check hook failed: %s", hook.Failure))
	}
	return nil
}

// upgradeMaintenance freezes the service and keeps the version it leaves
// for a rollback.
func (m *core) upgradeMaintenance(ctx context.Context, u *upgradeVersions) error {
	_, err := m.Mutate(ctx, u.svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
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
func (m *core) upgradeResources(ctx context.Context, r *run, u *upgradeVersions) error {
	rend, err := steps.RenderFor(ctx, m.RenderPorts(), m.Store, r.cache(), u.next, u.nb)
	if err != nil {
		return err
	}
	if _, err := m.Mutate(ctx, u.svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.Version, s.Digest, s.Source = u.to, u.nb.Digest, u.nb.Source
		return nil
	}); err != nil {
		return err
	}
	return steps.MoveResources(ctx, m.ApplyPorts(), u.next, rend, u.to, "upgrade")
}

// upgradeCleanup ends maintenance; the controllers take over.
func (m *core) upgradeCleanup(ctx context.Context, u *upgradeVersions) error {
	_, err := m.Mutate(ctx, u.svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		s.Maintenance = false
		s.Status = lifecycle.StatusBusy
		s.UpgradeBlockedFor = ""
		return nil
	})
	if err != nil {
		return err
	}
	return steps.RefreshStatus(ctx, m.Repo, m, u.svc.ID)
}

// onUpgradeFailure sets the service's status after a failed upgrade. Before
// maintenance nothing changed: the current version stays as it was. After,
// the upgrade is partial: Unhealthy, to fix and retry or roll back.
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
	svc.Maintenance = false
	svc.Status = lifecycle.StatusUnhealthy
}

// setStatusFromResourcesLater marks the service for the controllers to
// recompute its status (it was frozen during the checks).
func setStatusFromResourcesLater(svc *lifecycle.Service) {
	if svc.LifecycleState == lifecycle.StateActive && svc.Status == lifecycle.StatusMaintenance {
		svc.Status = lifecycle.StatusBusy
	}
}

// afterFailure starts an automatic rollback when the service asks for one.
func (m *core) afterFailure(ctx context.Context, op *lifecycle.Operation, outcome string) {
	m.queueReconcile(op.ServiceID)
	if op.Type != lifecycle.OpUpgrade || outcome != lifecycle.OutcomeFailed {
		return
	}
	svc, err := m.Repo.Service(ctx, op.ServiceID)
	if err != nil || !svc.AutoRollback || svc.PreviousVersion == nil || svc.Version != op.ToVersion {
		return
	}
	m.Log.Info("upgrade failed; rolling back automatically", "service", svc.ID, "to", svc.PreviousVersion.Version)
	if _, err := m.Rollback(ctx, svc.ID, "", "auto-rollback"); err != nil {
		m.Log.Error("automatic rollback", "service", svc.ID, "error", err)
	}
}

// maybeAutoUpgrade starts an upgrade to the newest registered version when
// the service asks for automatic upgrades. A version whose automatic
// upgrade failed is retried only after autoUpgradeRetry.
func (m *core) maybeAutoUpgrade(ctx context.Context, svc *lifecycle.Service) {
	if !svc.AutoUpgrade || svc.LifecycleState != lifecycle.StateActive || svc.ActiveOperation != "" || svc.Maintenance || svc.Digest == "" {
		return
	}
	next, err := m.AvailableUpgrade(ctx, svc)
	if err != nil {
		m.Log.Warn("automatic upgrade: read the catalog", "service", svc.ID, "error", err)
		return
	}
	if next == nil {
		return
	}
	if next.Version == svc.UpgradeBlockedFor && m.now().Sub(svc.UpdatedAt) < m.autoUpgradeRetry() {
		return
	}
	var op *lifecycle.Operation
	_, err = m.Mutate(ctx, svc.ID, func(tx lifecycle.Tx, s *lifecycle.Service) error {
		op = nil
		if s.ActiveOperation != "" || !s.AutoUpgrade {
			return nil
		}
		op = m.startUpgrade(s, next.Source, next.Digest, true, "auto-upgrade")
		s.ActiveOperation = op.ID
		s.Progress = &lifecycle.Progress{OperationID: op.ID, Type: op.Type, Step: op.Steps[0].Name, Percent: -1}
		return tx.PutOperation(op)
	})
	if err != nil {
		m.Log.Warn("automatic upgrade", "service", svc.ID, "error", err)
		return
	}
	if op != nil {
		m.Log.Info("starting automatic upgrade", "service", svc.ID, "from", svc.Version, "to", next.Version)
		m.enqueue(ctx, op)
	}
}

func (m *core) autoUpgradeRetry() time.Duration { return 30 * m.cfg.ReconcileInterval }
