package lifecycle

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// installStep runs the steps shared by activation and reconfiguration.
func (m *Manager) installStep(ctx context.Context, r *run, name string) error {
	b, err := m.loadBundle(r.svc)
	if err != nil {
		return err
	}
	switch name {
	case "render":
		_, err := m.renderFor(ctx, r, r.svc, b)
		return err
	case "compatibility":
		rend, err := m.renderFor(ctx, r, r.svc, b)
		if err != nil {
			return err
		}
		return m.checkInstall(ctx, r.svc, b, rend)
	case "prechecks":
		rend, err := m.renderFor(ctx, r, r.svc, b)
		if err != nil {
			return err
		}
		return m.prechecks(ctx, r.svc, b, rend, r.svc.Version)
	case "apply":
		rend, err := m.renderFor(ctx, r, r.svc, b)
		if err != nil {
			return err
		}
		return m.applyRendered(ctx, r.svc, rend, r.svc.Version)
	}
	return fmt.Errorf("%s has no step %q", r.op.Type, name)
}

// renderFor renders once per run (a restarted run renders again, with the
// inventory as it is then) and keeps the effective values on the service.
func (m *Manager) renderFor(ctx context.Context, r *run, svc *Service, b *bundle.Bundle) (*rendered, error) {
	key := "render/" + b.Digest
	if v, ok := r.scratch[key].(*rendered); ok {
		return v, nil
	}
	rend, err := m.render(ctx, svc, b, RenderInput{})
	if err != nil {
		if errors.Is(err, ErrInvalidArgument) {
			return nil, blocked(ErrTypeConfiguration, err)
		}
		return nil, err
	}
	if r.scratch == nil {
		r.scratch = map[string]any{}
	}
	r.scratch[key] = rend
	effective := base64.StdEncoding.EncodeToString(rend.Effective)
	if _, err := m.mutate(ctx, svc.ID, func(_ Tx, s *Service) error {
		// Only the installed version's render is the service's effective
		// configuration; an upgrade's checks render the next one.
		if s.Digest == b.Digest {
			s.Values.Effective = effective
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return rend, nil
}

// environments are the Supervisors rendered resources target, with their
// versions from the platform inventory.
func (m *Manager) environments(ctx context.Context, rend *rendered) ([]*compatibilityv1.Environment, error) {
	inv, err := m.repo.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	byName := supervisorsByName(inv)
	var envs []*compatibilityv1.Environment
	for _, name := range targetSupervisors(rend.Resources) {
		sup, ok := byName[name]
		if !ok {
			return nil, blocked(ErrTypeInstall, fmt.Errorf("rendered resources target Supervisor %q, which is not in the platform inventory (GET /v2/inventory)", name))
		}
		envs = append(envs, &compatibilityv1.Environment{Supervisor: name, SupervisorVersion: sup.GetVersion(), KubernetesVersion: sup.GetKubernetesVersion()})
	}
	return envs, nil
}

func supervisorsByName(inv *commonv1.Inventory) map[string]*commonv1.Supervisor {
	out := map[string]*commonv1.Supervisor{}
	for _, r := range inv.GetRegions() {
		for _, s := range r.GetSupervisors() {
			out[s.GetName()] = s
			if s.GetId() != "" {
				out[s.GetId()] = s
			}
		}
	}
	return out
}

// resultDetails turns compatibility results into error details; ERRORs
// block.
func resultDetails(results []*commonv1.CheckResult) (details []ErrorDetail, blockers []string) {
	for _, res := range results {
		sev := SeverityInfo
		switch strings.ToUpper(res.GetSeverity()) {
		case "ERROR":
			sev = SeverityError
			blockers = append(blockers, res.GetMessage())
		case "WARNING":
			sev = SeverityWarn
		}
		details = append(details, ErrorDetail{Type: ErrTypeInstall, Severity: sev, Message: res.GetMessage()})
	}
	return details, blockers
}

func (m *Manager) checkInstall(ctx context.Context, svc *Service, b *bundle.Bundle, rend *rendered) error {
	envs, err := m.environments(ctx, rend)
	if err != nil {
		return err
	}
	resp, err := m.peers.Compatibility.EvaluateInstall(ctx, &compatibilityv1.EvaluateInstallRequest{
		Package: packageVersion(b, svc.Version, svc.BuiltIn), Environments: envs,
	})
	if err != nil {
		return peerError("compatibility", err)
	}
	details, blockers := resultDetails(resp.GetResults())
	if _, err := m.mutate(ctx, svc.ID, func(_ Tx, s *Service) error {
		s.ErrorDetails = append(withoutType(s.ErrorDetails, ErrTypeInstall), nonErrors(details)...)
		return nil
	}); err != nil {
		return err
	}
	if resp.GetBlocked() || len(blockers) > 0 {
		return blocked(ErrTypeInstall, fmt.Errorf("compatibility check failed: %s", strings.Join(blockers, "; ")))
	}
	return nil
}

func nonErrors(ds []ErrorDetail) []ErrorDetail {
	var out []ErrorDetail
	for _, d := range ds {
		if d.Severity != SeverityError {
			out = append(out, d)
		}
	}
	return out
}

// desiredFor turns a resource record into what the target should hold.
func desiredFor(res *Resource, owner target.Owner) target.Desired {
	fin := res.Finalizers
	return target.Desired{Key: res.Target, Namespace: res.Namespace, Spec: res.Doc, Owner: owner, Finalizers: fin}
}

// stage dry-runs every resource on its target, bounded in parallel.
func (m *Manager) stage(ctx context.Context, svc *Service, resources []*Resource) ([]target.Staged, error) {
	out := make([]target.Staged, len(resources))
	err := m.parallel(ctx, len(resources), func(ctx context.Context, i int) error {
		st, err := m.driver.Stage(ctx, desiredFor(resources[i], target.Owner{ServiceID: svc.ID, Version: resources[i].OwnerVersion}))
		if err != nil {
			return err
		}
		out[i] = st
		return nil
	})
	return out, err
}

// parallel runs fn for 0..n-1 with at most TargetConcurrency at once and
// returns the first error.
func (m *Manager) parallel(ctx context.Context, n int, fn func(context.Context, int) error) error {
	sem := make(chan struct{}, m.cfg.TargetConcurrency)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}

// platformFacts merges the targets' facts with the inventory's versions.
func (m *Manager) platformFacts(ctx context.Context, supervisors []string) (*precheckv1.PlatformFacts, error) {
	facts, err := m.driver.Facts(ctx, supervisors)
	if err != nil {
		return nil, err
	}
	inv, err := m.repo.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	byName := supervisorsByName(inv)
	known := map[string]target.SupervisorFacts{}
	for _, s := range facts.Supervisors {
		known[s.Name] = s
	}
	pf := &precheckv1.PlatformFacts{VcfaVersion: facts.VCFAVersion}
	for _, name := range []string{target.SystemVCFA, target.SystemVCenter, target.SystemServiceManager} {
		pf.Targets = append(pf.Targets, &precheckv1.TargetFacts{Name: name, SupportedApiVersions: facts.SupportedAPIs})
	}
	for _, name := range supervisors {
		sf := known[name]
		inv := byName[name]
		k8s := inv.GetKubernetesVersion()
		if sf.KubernetesVersion != "" {
			k8s = sf.KubernetesVersion // the Supervisor's own /version
		}
		pf.Supervisors = append(pf.Supervisors, &precheckv1.SupervisorFacts{
			Name: name, Version: inv.GetVersion(), KubernetesVersion: k8s,
			Available:            quotaProto(sf.Available),
			SupportedApiVersions: sf.SupportedAPIs,
		})
	}
	return pf, nil
}

func quotaProto(q target.Quota) *precheckv1.ResourceQuota {
	return &precheckv1.ResourceQuota{CpuMillicores: q.CPUMillicores, MemoryBytes: q.MemoryBytes, StorageBytes: q.StorageBytes}
}

// prechecks stages the rendered resources and runs the dynamic pre-checks.
func (m *Manager) prechecks(ctx context.Context, svc *Service, b *bundle.Bundle, rend *rendered, version string) error {
	report, err := m.dynamicPrechecks(ctx, svc, b, rend, version)
	if err != nil {
		return err
	}
	if _, err := m.mutate(ctx, svc.ID, func(_ Tx, s *Service) error {
		s.PreCheck = report
		return nil
	}); err != nil {
		return err
	}
	if report.Status == "Failed" {
		return blocked(ErrTypeInstall, fmt.Errorf("dynamic pre-checks failed: %s", failedChecks(report)))
	}
	return nil
}

func (m *Manager) dynamicPrechecks(ctx context.Context, svc *Service, b *bundle.Bundle, rend *rendered, version string) (*PreCheckReport, error) {
	resources, err := resourcesFrom(svc, version, rend.Resources, m.now())
	if err != nil {
		return nil, blocked(ErrTypeInstall, err)
	}
	staged, err := m.stage(ctx, svc, resources)
	if err != nil {
		return nil, err
	}
	pf, err := m.platformFacts(ctx, targetSupervisors(rend.Resources))
	if err != nil {
		return nil, err
	}
	req := &precheckv1.RunDynamicPrechecksRequest{
		Bundle: &precheckv1.BundleFacts{ImagesLockYaml: b.ImagesLock, BundledImageDigests: b.BundledImageDigests,
			RegistryRepository: b.RegistryRepository, PluginManifests: b.PluginManifests},
		Platform: pf,
	}
	// One staged resource per rendered document: Secrets placed on several
	// Supervisors report the first placement.
	byDoc := map[string]int{}
	for i, res := range resources {
		k := res.Kind + "/" + res.Name + "/" + res.Supervisor
		if res.Kind == "Secret" {
			k = res.Kind + "/" + res.Name + "/"
		}
		if _, ok := byDoc[k]; !ok {
			byDoc[k] = i
		}
	}
	for _, doc := range rend.Resources {
		req.Resources = append(req.Resources, doc)
		j, ok := byDoc[doc.GetKind()+"/"+doc.GetName()+"/"+doc.GetSupervisor()]
		if !ok {
			continue
		}
		st := staged[j]
		req.Staged = append(req.Staged, &precheckv1.StagedResource{
			Index: doc.GetIndex(), Target: stagedTarget(resources[j].Target), Reachable: st.Reachable, Message: st.Message, Rejected: st.Rejected,
			Requested: quotaProto(st.Requested),
		})
	}
	resp, err := m.peers.Precheck.RunDynamicPrechecks(ctx, req)
	if err != nil {
		return nil, peerError("precheck", err)
	}
	return reportFrom(resp.GetReport()), nil
}

// stagedTarget names a resource's target as the precheck service looks it
// up: the Supervisor for Supervisor kinds, else the system (vcfa, vcenter,
// servicemanager).
func stagedTarget(k target.Key) string {
	if k.System == target.SystemSupervisor && k.Scope != "" {
		return k.Scope
	}
	return k.System
}

func reportFrom(p *commonv1.PreCheckReport) *PreCheckReport {
	r := &PreCheckReport{Status: p.GetPreCheckStatus()}
	for _, rc := range p.GetResourceChecks() {
		c := ResourceCheck{Type: rc.GetType(), Name: rc.GetName(), Status: rc.GetStatus(), Supervisor: rc.GetSupervisor()}
		for _, ch := range rc.GetChecks() {
			c.Checks = append(c.Checks, Check{Name: ch.GetName(), Status: ch.GetStatus(), Message: ch.GetMessage()})
		}
		r.ResourceChecks = append(r.ResourceChecks, c)
	}
	if r.Status == "" {
		r.Status = "Passed"
	}
	return r
}

func failedChecks(r *PreCheckReport) string {
	var out []string
	for _, rc := range r.ResourceChecks {
		for _, c := range rc.Checks {
			if c.Status == "Failed" {
				out = append(out, fmt.Sprintf("%s %s: %s: %s", rc.Type, rc.Name, c.Name, c.Message))
			}
		}
	}
	return strings.Join(out, "; ")
}

// applyRendered makes the service's resource records match a render owned
// by version: new ones are recorded and applied, changed ones re-applied,
// removed ones cleaned up. Target failures leave resources Unhealthy for
// the controllers to retry rather than failing the operation.
func (m *Manager) applyRendered(ctx context.Context, svc *Service, rend *rendered, version string) error {
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
	var apply, retargeted []*Resource
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[w.ID] = true
		if old, ok := existing[w.ID]; ok && old.Target != w.Target {
			retargeted = append(retargeted, old)
		} else if ok {
			w.Finalizers, w.Adopted, w.ExternalID = old.Finalizers, old.Adopted, old.ExternalID
			if old.Hash == w.Hash && old.Status == target.StatusHealthy && old.OwnerVersion == version && old.Target == w.Target {
				continue
			}
		}
		apply = append(apply, w)
	}
	var removed []*Resource
	for _, old := range have {
		if !wanted[old.ID] {
			removed = append(removed, old)
		}
	}
	if err := m.decommissionTargets(ctx, retargeted); err != nil {
		return err
	}
	// Record what is about to be applied before touching a target.
	if err := m.update(ctx, func(tx Tx) error {
		for _, r := range apply {
			if err := tx.PutResource(r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := m.removeResources(ctx, svc, removed, false, nil); err != nil {
		return err
	}
	m.applyAll(ctx, svc, apply)
	return m.refreshStatus(ctx, svc.ID)
}

// applyAll applies resources to their targets in parallel and records the
// outcome of each.
func (m *Manager) applyAll(ctx context.Context, svc *Service, resources []*Resource) {
	overlays := m.overlayIndex(ctx, svc.ID)
	_ = m.parallel(ctx, len(resources), func(ctx context.Context, i int) error {
		m.applyOne(ctx, svc, resources[i], overlays)
		return nil
	})
	_ = m.update(ctx, func(tx Tx) error {
		for _, r := range resources {
			if err := tx.PutResource(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// applyOne applies one resource and records its status on it.
func (m *Manager) applyOne(ctx context.Context, svc *Service, r *Resource, overlays *overlayIndex) {
	now := m.now()
	if r.Kind == "Overlay" {
		r.Status, r.Message = overlays.status(r)
		r.LastModified = now
		return
	}
	doc, status, msg, ok := m.withOverlay(ctx, r, overlays)
	if !ok {
		r.Status, r.Message, r.LastModified = status, msg, now
		return
	}
	owner := target.Owner{ServiceID: svc.ID, Version: r.OwnerVersion}
	d := target.Desired{Key: r.Target, Namespace: r.Namespace, Spec: doc, Owner: owner, Finalizers: r.Finalizers}
	if d.Finalizers == nil && !r.Adopted {
		d.Finalizers = []string{FinalizerCleanup}
	}
	obj, err := m.driver.Apply(ctx, d)
	if err != nil {
		r.Status = target.StatusUnhealthy
		switch {
		case errors.Is(err, target.ErrUnreachable):
			r.Status = target.StatusBusy
			r.Message = fmt.Sprintf("target unreachable, retrying: %v", err)
		case errors.Is(err, target.ErrOwnedByOther), errors.Is(err, target.ErrIncompatible):
			r.Message = fmt.Sprintf("cannot take ownership: %v", err)
		default:
			r.Message = fmt.Sprintf("apply failed, retrying: %v", err)
		}
		r.LastModified = now
		return
	}
	if obj.Adopted && !r.Adopted {
		// Adopted resources existed before the service: deleting the
		// service leaves them in place, so they carry no cleanup finalizer.
		r.Adopted = true
		if _, err := m.driver.Transfer(ctx, r.Target, owner, nil); err == nil {
			obj.Finalizers = nil
		}
	}
	r.Finalizers = slices.Clone(obj.Finalizers)
	if r.Finalizers == nil && !r.Adopted {
		r.Finalizers = []string{FinalizerCleanup}
	}
	r.ExternalID = obj.ExternalID
	r.ReadyConditions = obj.ReadyConditions
	if r.Status != obj.Status || r.Message != obj.Message {
		r.LastModified = now
	}
	r.Status, r.Message = obj.Status, obj.Message
	if status != "" {
		r.Message = msg
	}
}

// refreshStatus recomputes a service's status from its resources.
func (m *Manager) refreshStatus(ctx context.Context, id string) error {
	res, err := m.repo.Resources(ctx, id)
	if err != nil {
		return err
	}
	_, err = m.mutate(ctx, id, func(_ Tx, svc *Service) error {
		m.setStatusFromResources(svc, res)
		return nil
	})
	return err
}

// setStatusFromResources: Healthy when every resource is Healthy,
// Unhealthy when any is Unhealthy, Busy otherwise. Services that are not
// running keep their status.
func (m *Manager) setStatusFromResources(svc *Service, res []*Resource) {
	if svc.LifecycleState != StateActive || svc.Maintenance {
		return
	}
	status := StatusHealthy
	for _, r := range res {
		switch r.Status {
		case target.StatusUnhealthy:
			status = StatusUnhealthy
		case target.StatusBusy, target.StatusMaintenance:
			if status != StatusUnhealthy {
				status = StatusBusy
			}
		}
	}
	if svc.ActiveOperation != "" && status == StatusHealthy {
		status = StatusBusy
	}
	svc.Status = status
	if status == StatusHealthy {
		svc.LastKnownGood = svc.Version
	}
}
