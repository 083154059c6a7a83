package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Upgrade steps, in order. The first five only read: any ERROR there means
// the upgrade does not start and the current version stays as it was.
var upgradeSteps = []string{"download", "configuration", "compatibility", "precheck-hook", "prechecks", "maintenance", "resources", "cleanup"}

// Resource plan actions (seed 002 "Resource Handling During Upgrade").
const (
	ActionCreated        = "created"
	ActionDecommissioned = "decommissioned"
	ActionReconfigured   = "reconfigured"
	ActionUnchanged      = "unchanged"
)

// UpgradePlan is everything an upgrade checks and would do.
type UpgradePlan struct {
	FromVersion, ToVersion string
	Allowed                bool
	Compatibility          []*commonv1.CheckResult
	Hook                   *HookReport
	Dynamic                *PreCheckReport
	ConfigurationErrors    []string
	Resources              []PlanEntry
	SuggestedPath          []string
	BlockingReasons        []string
}

// HookReport is the outcome of a service's pre-check hook(s).
type HookReport struct {
	Configured bool
	Endpoint   string
	Results    []*commonv1.CheckResult
	Failure    string
	Blocked    bool
}

// PlanEntry says what an upgrade does with one resource.
type PlanEntry struct {
	Type, Name, Supervisor, Action string
}

// startUpgrade records an upgrade operation on svc (inside a transaction).
func (m *Manager) startUpgrade(svc *Service, source, digest string, automatic bool, by string) *Operation {
	op := m.newOperation(svc, OpUpgrade, by, OperationParams{Source: source, TargetDigest: digest, Automatic: automatic, Phase: svc.Phase}, upgradeSteps...)
	op.FromVersion = svc.Version
	svc.Phase = PhaseUpgrading
	svc.ErrorDetails = withoutType(withoutType(svc.ErrorDetails, ErrTypeInstall), ErrTypeDownload)
	return op
}

// upgradeTarget returns the bundle an upgrade moves to.
func (m *Manager) upgradeTarget(ctx context.Context, r *run) (*bundle.Bundle, error) {
	if r.op.Params.TargetDigest != "" {
		if b, err := m.bundles.Load(r.op.Params.TargetDigest); err == nil {
			return b, nil
		}
	}
	if r.op.Params.Source == "" {
		return nil, blocked(ErrTypeDownload, fmt.Errorf("the upgrade names neither a source nor a stored bundle"))
	}
	return m.fetch(ctx, r, r.op.Params.Source)
}

// checkTargetBundle refuses bundles that are not a newer version of the
// same service.
func checkTargetBundle(svc *Service, b *bundle.Bundle) (string, error) {
	if b.Package.RefName != "" && b.Package.RefName != svc.Name {
		return "", blocked(ErrTypeDownload, fmt.Errorf("the new bundle is %q, not a version of %q", b.Package.RefName, svc.Name))
	}
	v := b.Package.Version
	if v == "" {
		return "", blocked(ErrTypeDownload, fmt.Errorf("the new bundle's package.yml has no spec.version"))
	}
	if v == svc.Version {
		return "", blocked(ErrTypeDownload, fmt.Errorf("version %s is already installed", v))
	}
	if compareVersions(v, svc.Version) < 0 {
		return "", blocked(ErrTypeDownload, fmt.Errorf("version %s is older than the installed %s: downgrades go through POST /rollback", v, svc.Version))
	}
	return v, nil
}

// upgradeStep runs the steps of an upgrade operation.
func (m *Manager) upgradeStep(ctx context.Context, r *run, name string) error {
	svc := r.svc
	if name == "download" {
		b, err := m.upgradeTarget(ctx, r)
		if err != nil {
			return err
		}
		v, err := checkTargetBundle(svc, b)
		if err != nil {
			return err
		}
		if _, err := m.validateBundle(ctx, svc, b); err != nil {
			return err
		}
		r.op.ToVersion, r.op.Params.TargetDigest = v, b.Digest
		return m.update(ctx, func(tx Tx) error {
			if err := tx.PutCatalog(&CatalogEntry{Name: svc.Name, Version: v, Source: b.Source, Digest: b.Digest, Status: StatusReady, RegisteredAt: m.now()}); err != nil {
				return err
			}
			return tx.PutOperation(r.op)
		})
	}
	nb, err := m.bundles.Load(r.op.Params.TargetDigest)
	if err != nil {
		return fmt.Errorf("load the new bundle: %w", err)
	}
	// Before maintenance the installed version is svc's; from then on the
	// service points at the new version and PreviousVersion at the old.
	old := svc
	if svc.PreviousVersion != nil && svc.Version == r.op.ToVersion {
		old = svc.Clone()
		old.Version, old.Digest, old.Values = svc.PreviousVersion.Version, svc.PreviousVersion.Digest, svc.PreviousVersion.Values
	}
	ob, err := m.loadBundle(old)
	if err != nil {
		return err
	}
	next := old.Clone()
	next.Version, next.Digest = r.op.ToVersion, nb.Digest
	switch name {
	case "configuration":
		if errs := m.checkConfiguration(ctx, old, nb); len(errs) > 0 {
			return blocked(ErrTypeConfiguration, fmt.Errorf("the current configuration does not fit version %s: %s", r.op.ToVersion, strings.Join(errs, "; ")))
		}
		return nil
	case "compatibility":
		rend, err := m.renderFor(ctx, r, next, nb)
		if err != nil {
			return err
		}
		results, err := m.upgradeCompatibility(ctx, old, ob, nb, r.op.ToVersion, rend)
		if err != nil {
			return err
		}
		return m.noteResults(ctx, svc.ID, results, "compatibility check failed")
	case "precheck-hook":
		hook, err := m.runHook(ctx, old, ob, nb, r.op.ToVersion)
		if err != nil {
			return err
		}
		if err := m.noteResults(ctx, svc.ID, hook.Results, "the pre-check hook reported errors"); err != nil {
			return err
		}
		if hook.Failure != "" {
			return blocked(ErrTypeInstall, fmt.Errorf("the pre-check hook failed: %s", hook.Failure))
		}
		return nil
	case "prechecks":
		rend, err := m.renderFor(ctx, r, next, nb)
		if err != nil {
			return err
		}
		return m.prechecks(ctx, next, nb, rend, r.op.ToVersion)
	case "maintenance":
		_, err := m.mutate(ctx, svc.ID, func(_ Tx, s *Service) error {
			if s.Version != r.op.ToVersion {
				s.PreviousVersion = &VersionRef{Version: s.Version, Digest: s.Digest, Source: s.Source, Values: s.Values}
			}
			s.Maintenance = true
			s.Status = StatusMaintenance
			s.Phase = PhaseUpgrading
			return nil
		})
		return err
	case "resources":
		rend, err := m.renderFor(ctx, r, next, nb)
		if err != nil {
			return err
		}
		if _, err := m.mutate(ctx, svc.ID, func(_ Tx, s *Service) error {
			s.Version, s.Digest, s.Source = r.op.ToVersion, nb.Digest, nb.Source
			return nil
		}); err != nil {
			return err
		}
		return m.moveResources(ctx, next, rend, r.op.ToVersion, "upgrade")
	case "cleanup":
		_, err := m.mutate(ctx, svc.ID, func(_ Tx, s *Service) error {
			s.Maintenance = false
			s.Status = StatusBusy
			s.UpgradeBlockedFor = ""
			return nil
		})
		if err != nil {
			return err
		}
		return m.refreshStatus(ctx, svc.ID)
	}
	return fmt.Errorf("upgrade has no step %q", name)
}

// noteResults keeps WARNING/INFO results visible and blocks on ERRORs.
func (m *Manager) noteResults(ctx context.Context, id string, results []*commonv1.CheckResult, what string) error {
	details, blockers := resultDetails(results)
	if _, err := m.mutate(ctx, id, func(_ Tx, s *Service) error {
		s.ErrorDetails = append(s.ErrorDetails, nonErrors(details)...)
		return nil
	}); err != nil {
		return err
	}
	if len(blockers) > 0 {
		return blocked(ErrTypeInstall, fmt.Errorf("%s: %s", what, strings.Join(blockers, "; ")))
	}
	return nil
}

// checkConfiguration validates the service's current configuration against
// a new bundle's schema by rendering its effective values.
func (m *Manager) checkConfiguration(ctx context.Context, svc *Service, nb *bundle.Bundle) []string {
	layers, err := m.layers(ctx, svc, RenderInput{})
	if err != nil {
		return []string{err.Error()}
	}
	_, err = m.peers.Renderer.RenderEffectiveValues(ctx, &rendererv1.RenderEffectiveValuesRequest{Bundle: bundleProto(nb), Values: layers})
	if err != nil {
		return []string{peerError("renderer", err).Error()}
	}
	return nil
}

func (m *Manager) upgradeCompatibility(ctx context.Context, svc *Service, ob, nb *bundle.Bundle, toVersion string, rend *rendered) ([]*commonv1.CheckResult, error) {
	envs, err := m.environments(ctx, rend)
	if err != nil {
		return nil, err
	}
	resp, err := m.peers.Compatibility.EvaluateUpgrade(ctx, &compatibilityv1.EvaluateUpgradeRequest{
		Installed:    packageVersion(ob, svc.Version, svc.BuiltIn),
		Target:       packageVersion(nb, toVersion, svc.BuiltIn),
		Environments: envs,
	})
	if err != nil {
		return nil, peerError("compatibility", err)
	}
	return resp.GetResults(), nil
}

// runHook dispatches the service's pre-check hook on every Supervisor the
// installed version runs on (or once, without Supervisor secrets, when it
// runs on none).
func (m *Manager) runHook(ctx context.Context, svc *Service, ob, nb *bundle.Bundle, toVersion string) (*HookReport, error) {
	res, err := m.repo.Resources(ctx, svc.ID)
	if err != nil {
		return nil, err
	}
	var sups []string
	for _, r := range res {
		if r.Supervisor != "" && !slices.Contains(sups, r.Supervisor) {
			sups = append(sups, r.Supervisor)
		}
	}
	sort.Strings(sups)
	if len(sups) == 0 {
		sups = []string{""}
	}
	var reqs []*precheckv1.DispatchHookRequest
	for _, sup := range sups {
		req := &precheckv1.DispatchHookRequest{
			SourcePackageYaml: ob.PackageYAML, TargetPackageYaml: nb.PackageYAML, Namespace: svc.Namespace,
			ServiceName: svc.Name, SourceVersion: svc.Version, TargetVersion: toVersion, Supervisor: sup,
			Secrets: map[string]*precheckv1.SecretData{},
		}
		if sup != "" {
			secrets, err := m.driver.Secrets(ctx, sup, svc.Namespace)
			if err != nil {
				return nil, err
			}
			for name, data := range secrets {
				req.Secrets[name] = &precheckv1.SecretData{Data: data}
			}
		}
		reqs = append(reqs, req)
	}
	resp, err := m.peers.Precheck.DispatchHooks(ctx, &precheckv1.DispatchHooksRequest{Requests: reqs})
	if err != nil {
		return nil, peerError("precheck", err)
	}
	report := &HookReport{}
	var failures []string
	for _, h := range resp.GetResults() {
		report.Configured = report.Configured || h.GetConfigured()
		if report.Endpoint == "" {
			report.Endpoint = h.GetEndpoint()
		}
		report.Results = append(report.Results, h.GetResults()...)
		if h.GetFailure() != "" {
			where := ""
			if h.GetSupervisor() != "" {
				where = " (Supervisor " + h.GetSupervisor() + ")"
			}
			failures = append(failures, h.GetFailure()+where)
		}
		report.Blocked = report.Blocked || h.GetBlocked()
	}
	report.Failure = strings.Join(failures, "; ")
	return report, nil
}

// planResources classifies each resource as an upgrade would handle it.
func planResources(have []*Resource, want []*Resource) []PlanEntry {
	existing := map[string]*Resource{}
	for _, r := range have {
		existing[r.ID] = r
	}
	wanted := map[string]bool{}
	var out []PlanEntry
	for _, w := range want {
		wanted[w.ID] = true
		action := ActionCreated
		if old, ok := existing[w.ID]; ok {
			action = ActionUnchanged
			if old.Hash != w.Hash {
				action = ActionReconfigured
			}
		}
		out = append(out, PlanEntry{Type: w.Kind, Name: w.Name, Supervisor: w.Supervisor, Action: action})
	}
	for _, r := range have {
		if !wanted[r.ID] {
			out = append(out, PlanEntry{Type: r.Kind, Name: r.Name, Supervisor: r.Supervisor, Action: ActionDecommissioned})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		if out[i].Supervisor != out[j].Supervisor {
			return out[i].Supervisor < out[j].Supervisor
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// moveResources hands a service's resources to version per seed 002:
// new ones are created (owned by version, finalizers added), removed ones
// decommissioned (target cleaned up, then the record and its finalizers
// go), kept ones have their ownership and finalizers transferred and are
// re-applied when their configuration changed. Every action is idempotent,
// so a restart re-runs the step safely. A resource that fails leaves the
// step failed: a partial upgrade, Unhealthy, to fix and retry or roll back.
func (m *Manager) moveResources(ctx context.Context, svc *Service, rend *rendered, version, what string) error {
	want, err := resourcesFrom(svc, version, rend.Resources, m.now())
	if err != nil {
		return blocked(ErrTypeInstall, err)
	}
	have, err := m.repo.Resources(ctx, svc.ID)
	if err != nil {
		return err
	}
	existing := map[string]*Resource{}
	for _, r := range have {
		existing[r.ID] = r
	}
	wanted := map[string]bool{}
	var create, transfer, retargeted []*Resource
	for _, w := range want {
		wanted[w.ID] = true
		old, ok := existing[w.ID]
		if !ok {
			create = append(create, w)
			continue
		}
		if old.Target != w.Target {
			// The resource's target identity changed (e.g. a registry's
			// endpoint): the old target object is decommissioned and a
			// new one created.
			retargeted = append(retargeted, old)
			create = append(create, w)
			continue
		}
		w.Adopted, w.ExternalID, w.Status, w.Message, w.LastModified = old.Adopted, old.ExternalID, old.Status, old.Message, old.LastModified
		w.Finalizers = old.Finalizers
		if old.OwnerVersion == version && old.Hash == w.Hash && old.Status == target.StatusHealthy {
			continue // done before a restart
		}
		transfer = append(transfer, w)
	}
	var removed []*Resource
	for _, r := range have {
		if !wanted[r.ID] {
			removed = append(removed, r)
		}
	}
	// Old target objects go before the records that point at them are
	// replaced: a restart in between finds the old records and retries.
	if err := m.decommissionTargets(ctx, retargeted); err != nil {
		return err
	}
	if err := m.update(ctx, func(tx Tx) error {
		for _, r := range append(slices.Clone(create), transfer...) {
			if err := tx.PutResource(r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	// Ownership transfer first, so a kept resource is never ownerless.
	owner := target.Owner{ServiceID: svc.ID, Version: version}
	var mu sync.Mutex
	var transferErrs []string
	_ = m.parallel(ctx, len(transfer), func(ctx context.Context, i int) error {
		r := transfer[i]
		if r.Kind == "Overlay" {
			return nil
		}
		fin := []string{FinalizerCleanup}
		if r.Adopted {
			fin = nil
		}
		if _, err := m.driver.Transfer(ctx, r.Target, owner, fin); err != nil && !errors.Is(err, target.ErrNotFound) {
			mu.Lock()
			transferErrs = append(transferErrs, fmt.Sprintf("%s %s: %v", r.Kind, r.Name, err))
			mu.Unlock()
			return nil
		}
		r.Finalizers = fin
		return nil
	})
	if len(transferErrs) > 0 {
		return fmt.Errorf("transferring ownership failed: %s: %w", strings.Join(transferErrs, "; "), ErrUnavailable)
	}
	if err := m.removeResources(ctx, svc, removed, false, nil); err != nil {
		return err
	}
	apply := append(create, transfer...)
	m.applyAll(ctx, svc, apply)
	var failed []string
	for _, r := range apply {
		if r.Status == target.StatusUnhealthy {
			failed = append(failed, fmt.Sprintf("%s %s%s: %s", r.Kind, r.Name, onSupervisor(r.Supervisor), r.Message))
		}
	}
	if len(failed) > 0 {
		return blocked(ErrTypeResource, fmt.Errorf("%s left %d resource(s) failed: %s", what, len(failed), strings.Join(failed, "; ")))
	}
	return nil
}

// onUpgradeFailure sets the service's status after a failed upgrade. Before
// maintenance nothing changed: the current version stays as it was. After,
// the upgrade is partial: Unhealthy, to fix and retry or roll back.
func (m *Manager) onUpgradeFailure(svc *Service, op *Operation, outcome string) {
	partial := false
	for _, s := range op.Steps {
		if (s.Name == "resources" || s.Name == "cleanup") && (s.Status == StepFailed || s.Status == StepSucceeded) {
			partial = true
		}
	}
	if op.Params.Automatic {
		svc.UpgradeBlockedFor = op.ToVersion
	}
	if outcome == OutcomeStuck {
		svc.Status = StatusUnhealthy
		return
	}
	if !partial {
		svc.Maintenance = false
		svc.Phase = op.Params.Phase
		m.setStatusFromResourcesLater(svc)
		return
	}
	svc.Maintenance = false
	svc.Status = StatusUnhealthy
}

// setStatusFromResourcesLater marks the service for the controllers to
// recompute its status (it was frozen during the checks).
func (m *Manager) setStatusFromResourcesLater(svc *Service) {
	if svc.LifecycleState == StateActive && svc.Status == StatusMaintenance {
		svc.Status = StatusBusy
	}
}

// afterFailure starts an automatic rollback when the service asks for one.
func (m *Manager) afterFailure(ctx context.Context, op *Operation, outcome string) {
	m.kickControllers()
	if op.Type != OpUpgrade || outcome != OutcomeFailed {
		return
	}
	svc, err := m.repo.Service(ctx, op.ServiceID)
	if err != nil || !svc.AutoRollback || svc.PreviousVersion == nil || svc.Version != op.ToVersion {
		return
	}
	m.log.Info("upgrade failed; rolling back automatically", "service", svc.ID, "to", svc.PreviousVersion.Version)
	if _, err := m.Rollback(ctx, svc.ID, "", "auto-rollback"); err != nil {
		m.log.Error("automatic rollback", "service", svc.ID, "error", err)
	}
}

func (m *Manager) afterSuccess(context.Context, *Operation) {}

// maybeAutoUpgrade starts an upgrade to the newest registered version when
// the service asks for automatic upgrades. A version whose automatic
// upgrade failed is retried only after autoUpgradeRetry.
func (m *Manager) maybeAutoUpgrade(ctx context.Context, svc *Service) {
	if !svc.AutoUpgrade || svc.LifecycleState != StateActive || svc.ActiveOperation != "" || svc.Maintenance || svc.Digest == "" {
		return
	}
	next := m.AvailableUpgrade(ctx, svc)
	if next == nil {
		return
	}
	if next.Version == svc.UpgradeBlockedFor && m.now().Sub(svc.UpdatedAt) < m.autoUpgradeRetry() {
		return
	}
	var op *Operation
	_, err := m.mutate(ctx, svc.ID, func(tx Tx, s *Service) error {
		op = nil
		if s.ActiveOperation != "" || !s.AutoUpgrade {
			return nil
		}
		op = m.startUpgrade(s, next.Source, next.Digest, true, "auto-upgrade")
		s.ActiveOperation = op.ID
		s.Progress = &Progress{OperationID: op.ID, Type: op.Type, Step: op.Steps[0].Name, Percent: -1}
		return tx.PutOperation(op)
	})
	if err != nil {
		m.log.Warn("automatic upgrade", "service", svc.ID, "error", err)
		return
	}
	if op != nil {
		m.log.Info("starting automatic upgrade", "service", svc.ID, "from", svc.Version, "to", next.Version)
		m.enqueue(ctx, op)
	}
}

func (m *Manager) autoUpgradeRetry() time.Duration { return 30 * m.cfg.ReconcileInterval }

// AvailableUpgrade is the newest registered version newer than the
// installed one, or nil.
func (m *Manager) AvailableUpgrade(ctx context.Context, svc *Service) *CatalogEntry {
	if svc.Name == "" || svc.Version == "" {
		return nil
	}
	entries, err := m.repo.Catalog(ctx, svc.Name)
	if err != nil {
		return nil
	}
	var best *CatalogEntry
	for _, e := range entries {
		if e.Status != StatusReady || e.Digest == "" || compareVersions(e.Version, svc.Version) <= 0 {
			continue
		}
		if best == nil || compareVersions(e.Version, best.Version) > 0 {
			best = e
		}
	}
	return best
}

// semverRE matches strict semantic versions (semver.org's grammar, less
// the leading-zero rules).
var semverRE = regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`)

// compareVersions orders dotted versions numerically segment by segment
// (semver core and four-segment versions alike), falling back to text.
func compareVersions(a, b string) int {
	ca, _, _ := strings.Cut(strings.TrimPrefix(a, "v"), "+")
	cb, _, _ := strings.Cut(strings.TrimPrefix(b, "v"), "+")
	ca, preA, _ := strings.Cut(ca, "-")
	cb, preB, _ := strings.Cut(cb, "-")
	pa, pb := strings.Split(ca, "."), strings.Split(cb, ".")
	for i := 0; i < max(len(pa), len(pb)); i++ {
		var x, y int
		var ex, ey error
		if i < len(pa) {
			x, ex = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, ey = strconv.Atoi(pb[i])
		}
		if ex != nil || ey != nil {
			return strings.Compare(a, b)
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case preA == preB:
		return 0
	case preA == "":
		return 1
	case preB == "":
		return -1
	}
	return strings.Compare(preA, preB)
}

// PreviewUpgrade runs every check of an upgrade without changing anything
// and returns what the upgrade would do.
func (m *Manager) PreviewUpgrade(ctx context.Context, id, source, targetVersion string) (*UpgradePlan, error) {
	svc, err := m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	ob, err := m.loadBundle(svc)
	if err != nil {
		return nil, err
	}
	var nb *bundle.Bundle
	switch {
	case source != "":
		if err := m.ValidateSource(source); err != nil {
			return nil, err
		}
		if nb, err = m.bundles.Fetch(ctx, source, nil); err != nil {
			return nil, invalidArgument("fetch "+source, err)
		}
	case targetVersion != "":
		entry, err := m.catalogEntry(ctx, svc.Name, targetVersion)
		if err != nil {
			return nil, err
		}
		if nb, err = m.bundles.Load(entry.Digest); err != nil {
			return nil, err
		}
	default:
		next := m.AvailableUpgrade(ctx, svc)
		if next == nil {
			return nil, fmt.Errorf("no newer version of %s is registered: give a source or a targetVersion: %w", svc.Name, ErrInvalidArgument)
		}
		if nb, err = m.bundles.Load(next.Digest); err != nil {
			return nil, err
		}
	}
	toVersion, err := checkTargetBundle(svc, nb)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrInvalidArgument)
	}
	plan := &UpgradePlan{FromVersion: svc.Version, ToVersion: toVersion, Allowed: true}
	block := func(reason string) {
		plan.Allowed = false
		plan.BlockingReasons = append(plan.BlockingReasons, reason)
	}
	if _, err := m.validateBundle(ctx, svc, nb); err != nil {
		if errors.Is(err, ErrUnavailable) {
			return nil, err
		}
		block(err.Error())
	}
	plan.ConfigurationErrors = m.checkConfiguration(ctx, svc, nb)
	for _, e := range plan.ConfigurationErrors {
		block("configuration: " + e)
	}
	next := svc.Clone()
	next.Version, next.Digest = toVersion, nb.Digest
	rend, err := m.render(ctx, next, nb, RenderInput{})
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return nil, err
		}
		block("render: " + err.Error())
		return plan, nil
	}
	results, err := m.upgradeCompatibility(ctx, svc, ob, nb, toVersion, rend)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return nil, err
		}
		block(err.Error())
	}
	plan.Compatibility = results
	for _, r := range results {
		if strings.EqualFold(r.GetSeverity(), "ERROR") {
			block(r.GetMessage())
		}
	}
	if !plan.Allowed {
		plan.SuggestedPath = m.suggestPath(ctx, svc, ob, toVersion, rend)
	}
	hook, err := m.runHook(ctx, svc, ob, nb, toVersion)
	if err != nil {
		return nil, err
	}
	plan.Hook = hook
	if hook.Failure != "" {
		block("pre-check hook: " + hook.Failure)
	}
	for _, r := range hook.Results {
		if strings.EqualFold(r.GetSeverity(), "ERROR") {
			block("pre-check hook: " + r.GetMessage())
		}
	}
	report, err := m.dynamicPrechecks(ctx, next, nb, rend, toVersion)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return nil, err
		}
		block(err.Error())
	} else {
		plan.Dynamic = report
		if report.Status == "Failed" {
			block("dynamic pre-checks: " + failedChecks(report))
		}
	}
	have, err := m.repo.Resources(ctx, svc.ID)
	if err != nil {
		return nil, err
	}
	want, err := resourcesFrom(next, toVersion, rend.Resources, m.now())
	if err != nil {
		block(err.Error())
	} else {
		plan.Resources = planResources(have, want)
	}
	return plan, nil
}

// suggestPath asks the compatibility service for a legal chain of
// registered versions.
func (m *Manager) suggestPath(ctx context.Context, svc *Service, ob *bundle.Bundle, toVersion string, rend *rendered) []string {
	entries, err := m.repo.Catalog(ctx, svc.Name)
	if err != nil {
		return nil
	}
	if !semverRE.MatchString(svc.Version) {
		return nil
	}
	var avail []*compatibilityv1.PackageVersion
	for _, e := range entries {
		// Path planning works on semantic versions only.
		if e.Digest == "" || e.Status != StatusReady || !semverRE.MatchString(e.Version) {
			continue
		}
		b, err := m.bundles.Load(e.Digest)
		if err != nil {
			continue
		}
		avail = append(avail, packageVersion(b, e.Version, e.BuiltIn))
	}
	envs, err := m.environments(ctx, rend)
	if err != nil {
		return nil
	}
	resp, err := m.peers.Compatibility.PlanUpgradePath(ctx, &compatibilityv1.PlanUpgradePathRequest{
		Installed: packageVersion(ob, svc.Version, svc.BuiltIn), Available: avail, TargetVersion: toVersion, Environments: envs,
	})
	if err != nil || !resp.GetFound() {
		return nil
	}
	return resp.GetPath()
}

func (m *Manager) catalogEntry(ctx context.Context, name, version string) (*CatalogEntry, error) {
	entries, err := m.repo.Catalog(ctx, name)
	if err != nil {
		return nil, err
	}
	var known []string
	for _, e := range entries {
		if e.Version == version && e.Digest != "" {
			return e, nil
		}
		known = append(known, e.Version)
	}
	return nil, fmt.Errorf("version %s of %s is not registered (registered: %s): %w", version, name, strings.Join(known, ", "), ErrInvalidArgument)
}
