package lifecycle

import (
	"context"
	"errors"
	"time"

	"github.com/vcfsm/vcfsm/platform/safe"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// kickControllers asks for a reconcile pass soon.
func (m *core) kickControllers() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// controllerLoop reconciles every running service periodically and on
// every kick.
func (m *core) controllerLoop(ctx context.Context) {
	t := time.NewTicker(m.cfg.ReconcileInterval)
	defer t.Stop()
	var refresh <-chan time.Time
	r, canRefresh := m.repo.(interface{ Refresh(context.Context) error })
	if canRefresh && m.cfg.RefreshInterval > 0 {
		rt := time.NewTicker(m.cfg.RefreshInterval)
		defer rt.Stop()
		refresh = rt.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.kick:
		case <-refresh:
			if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("refresh the service view", "error", err)
			}
		}
		m.ReconcileAll(ctx)
	}
}

// ReconcileAll runs one controller pass over every service.
func (m *core) ReconcileAll(ctx context.Context) {
	for _, svc := range m.repo.Services(ctx) {
		if ctx.Err() != nil {
			return
		}
		_ = safe.Call(m.log, "auto-upgrade check of "+svc.ID, func() error { m.maybeAutoUpgrade(ctx, svc); return nil })
		if !reconciled(svc) || !m.checkDue(svc) {
			continue
		}
		// A panicking reconcile fails that reconcile only.
		if err := safe.Call(m.log, "reconcile of "+svc.ID, func() error { return m.reconcile(ctx, svc.Clone()) }); err != nil && ctx.Err() == nil {
			m.log.Warn("reconcile", "service", svc.ID, "error", err)
		}
	}
}

// reconciled reports services the controllers keep in shape: active, not
// in maintenance, with no operation of their own in flight. Paused and
// inactive services are skipped.
func reconciled(svc *Service) bool {
	return svc.LifecycleState == StateActive && !svc.Maintenance && svc.ActiveOperation == ""
}

// reconcile brings each resource of a service to its desired state on its
// target: missing or changed ones are (re-)applied, pending ones polled.
func (m *core) reconcile(ctx context.Context, svc *Service) error {
	res, err := m.repo.Resources(ctx, svc.ID)
	if err != nil {
		return err
	}
	var apply []*Resource
	var changed []*Resource
	for _, r := range res {
		if r.Kind == "Overlay" {
			apply = append(apply, r)
			continue
		}
		read := time.Now()
		obj, err := m.driver.Get(ctx, r.Target)
		m.cfg.Observer.Reconciled(r.Kind, r.Target.System, time.Since(read), err)
		switch {
		case errors.Is(err, target.ErrNotFound):
			apply = append(apply, r) // never applied, or removed behind our back
		case err != nil:
			if r.Status != target.StatusBusy {
				r.Status, r.Message, r.LastModified = target.StatusBusy, "target unreachable: "+err.Error(), m.now()
				changed = append(changed, r)
			}
		case obj.Owner.ServiceID != svc.ID, r.Status == target.StatusUnhealthy, !sameSpec(obj, r):
			apply = append(apply, r)
		case obj.Status != r.Status || obj.Message != r.Message && r.Status != target.StatusHealthy:
			r.Status, r.Message, r.LastModified = obj.Status, obj.Message, m.now()
			r.ReadyConditions = obj.ReadyConditions
			changed = append(changed, r)
		}
	}
	if len(changed) > 0 {
		if err := m.putResources(ctx, changed); err != nil {
			return err
		}
	}
	if len(apply) > 0 && m.stillReconciled(ctx, svc.ID) {
		if err := m.applyAll(ctx, svc, apply); err != nil {
			return err
		}
	}
	// Status is written only when it changes, so quiet passes write nothing.
	all, err := m.repo.Resources(ctx, svc.ID)
	if err != nil {
		return err
	}
	if m.sweepDue(svc.ID) {
		if _, err := m.sweepOrphans(ctx, svc.ID, all); err != nil {
			m.log.Warn("sweep orphaned target resources", "service", svc.ID, "error", err)
		}
	}
	probe := svc.Clone()
	m.setStatusFromResources(probe, all)
	if probe.Status == svc.Status && probe.LastKnownGood == svc.LastKnownGood {
		return nil
	}
	_, err = m.mutate(ctx, svc.ID, func(_ Tx, s *Service) error {
		if !reconciled(s) {
			return nil
		}
		m.setStatusFromResources(s, all)
		return nil
	})
	return err
}

// checkDue: a service that is not Healthy is reconciled on every pass; a
// Healthy one every 15 passes, which still catches drift on its targets
// while keeping thousands of quiet services cheap. Any change kicks the
// controllers and moves the service out of Healthy, so it is seen at once.
func (m *core) checkDue(svc *Service) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastCheck == nil {
		m.lastCheck = map[string]time.Time{}
	}
	now := m.now()
	if svc.Status == StatusHealthy {
		if last, ok := m.lastCheck[svc.ID]; ok && now.Sub(last) < 15*m.cfg.ReconcileInterval {
			return false
		}
	}
	m.lastCheck[svc.ID] = now
	return true
}

// sweepDue spaces out orphan sweeps (they list the targets): once per
// 30 controller periods per service.
func (m *core) sweepDue(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastSweep == nil {
		m.lastSweep = map[string]time.Time{}
	}
	now := m.now()
	if last, ok := m.lastSweep[id]; ok && now.Sub(last) < 30*m.cfg.ReconcileInterval {
		return false
	}
	m.lastSweep[id] = now
	return true
}

// sameSpec reports whether the target holds what the record wants, for
// resources without overlays (an overlay transforms the spec on purpose).
func sameSpec(obj target.Object, r *Resource) bool {
	if labelOf(r.Doc, LabelOverlay) != "" {
		return r.ExternalID != ""
	}
	return docHash(obj.Spec) == r.Hash
}
