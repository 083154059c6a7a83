package manager

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/platform/safe"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// The controllers are event-driven: a rate-limited work queue keyed by
// service id (internal/workqueue, client-go's design) is fed by the
// store's commits (every service a transaction wrote), by the target
// driver's change feed (target.ChangeFeed: an object a service owns
// changed, or the targets' facts did), by operation ends, and by timers:
// a service that is not Healthy is looked at again every
// ReconcileInterval (pending resources are polled, failed applies
// retried), a failing reconcile backs off per service, a blocked
// automatic upgrade is retried after its delay. A quiet Healthy service
// costs nothing. Without a change feed, Healthy services are re-read every
// 15 periods instead, so drift behind their back is still found.

// controllerWorkers reconcile distinct services in parallel; one service
// is never reconciled by two workers at once (the queue's rule).
const controllerWorkers = 2

// healthyRecheck: without a change feed, a Healthy service's targets are
// re-read every 15 periods.
const healthyRecheck = 15

// kickControllers queues every service for a controller pass.
func (m *core) kickControllers() {
	for _, svc := range m.Repo.Services(context.Background()) {
		m.queue.Add(svc.ID)
	}
}

// queueReconcile queues one service. A service its own controller pass is
// working on is looked at again one period later instead: the pass's own
// applies and writes come back through the feeds, and reacting to them at
// once would loop.
func (m *core) queueReconcile(id string) {
	m.mu.Lock()
	busy := m.reconciling[id]
	m.mu.Unlock()
	if busy {
		m.queue.AddAfter(id, m.cfg.ReconcileInterval)
		return
	}
	m.queue.Add(id)
}

// onTargetChange is the driver's change feed.
func (m *core) onTargetChange(c target.Change) {
	if c.ServiceID == "" {
		m.kickControllers()
		return
	}
	m.queueReconcile(c.ServiceID)
}

// controllerLoop runs the controller workers until ctx ends. With an etcd
// store shared by replicas it also reloads the service view periodically
// and queues every service after each reload.
func (m *core) controllerLoop(ctx context.Context) {
	if feed, ok := m.Driver.(target.ChangeFeed); ok {
		feed.Watch(ctx, m.onTargetChange)
	}
	stop := context.AfterFunc(ctx, m.queue.ShutDown)
	defer stop()
	m.queueAtStart(ctx)
	var wg sync.WaitGroup
	for range controllerWorkers {
		wg.Go(func() {
			for m.processNext(ctx) {
			}
		})
	}
	defer wg.Wait()
	r, canRefresh := m.Repo.(interface{ Refresh(context.Context) error })
	if !canRefresh || m.cfg.RefreshInterval <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(m.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
				m.Log.Warn("refresh the service view", "error", err)
				continue
			}
			m.kickControllers()
		}
	}
}

// queueAtStart queues what needs a pass after a start: services the
// controllers keep that are not Healthy, automatic upgrades, and — without
// a change feed — everything.
func (m *core) queueAtStart(ctx context.Context) {
	for _, svc := range m.Repo.Services(ctx) {
		if !m.feed || svc.AutoUpgrade || (reconciled(svc) && svc.Status != lifecycle.StatusHealthy) {
			m.queue.Add(svc.ID)
		}
	}
}

// ReconcileAll queues every service for a controller pass.
func (m *core) ReconcileAll(context.Context) { m.kickControllers() }

// processNext runs one queued service's pass; false once the queue shut
// down.
func (m *core) processNext(ctx context.Context) bool {
	id, ok := m.queue.Get()
	if !ok {
		return false
	}
	defer m.queue.Done(id)
	m.reconcileKey(ctx, id)
	return true
}

// reconcileKey is one controller pass over one service: the automatic
// upgrade check, then the reconcile when the service is one the
// controllers keep, then when to look again.
func (m *core) reconcileKey(ctx context.Context, id string) {
	svc, err := m.Repo.Service(ctx, id)
	if err != nil {
		m.queue.Forget(id) // deleted
		return
	}
	_ = safe.Call(m.Log, "auto-upgrade check of "+id, func() error { m.maybeAutoUpgrade(ctx, svc); return nil })
	if svc.AutoUpgrade && svc.UpgradeBlockedFor != "" {
		m.queue.AddAfter(id, m.autoUpgradeRetry())
	}
	if !reconciled(svc) {
		m.queue.Forget(id) // its operation's end or its next change queues it
		return
	}
	m.mu.Lock()
	m.reconciling[id] = true
	m.mu.Unlock()
	// A panicking reconcile fails that reconcile only.
	err = safe.Call(m.Log, "reconcile of "+id, func() error { return m.reconcile(ctx, svc) })
	m.mu.Lock()
	delete(m.reconciling, id)
	m.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			m.Log.Warn("reconcile", "service", id, "error", err)
			m.queue.AddRateLimited(id)
		}
		return
	}
	m.queue.Forget(id)
	after, err := m.Repo.Service(ctx, id)
	switch {
	case err != nil:
	case after.Status != lifecycle.StatusHealthy:
		m.queue.AddAfter(id, m.cfg.ReconcileInterval)
	case !m.feed:
		m.queue.AddAfter(id, healthyRecheck*m.cfg.ReconcileInterval)
	}
}

// reconciled reports services the controllers keep in shape: active, not
// in maintenance, with no operation of their own in flight. Paused and
// inactive services are skipped.
func reconciled(svc *lifecycle.Service) bool {
	return svc.LifecycleState == lifecycle.StateActive && !svc.Maintenance && svc.ActiveOperation == ""
}

// reconcile brings each resource of a service to its desired state on its
// target: missing or changed ones are (re-)applied, pending ones polled.
func (m *core) reconcile(ctx context.Context, svc *lifecycle.Service) error {
	res, err := m.Repo.Resources(ctx, svc.ID)
	if err != nil {
		return err
	}
	objs, errs, err := m.readTargets(ctx, res)
	if err != nil {
		return err
	}
	var apply []*lifecycle.Resource
	var changed []*lifecycle.Resource
	for i, r := range res {
		if r.Kind == "Overlay" {
			apply = append(apply, r)
			continue
		}
		obj, err := objs[i], errs[i]
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
		if err := steps.PutResources(ctx, m.RecordPorts(), changed); err != nil {
			return err
		}
	}
	if len(apply) > 0 && m.stillReconciled(ctx, svc.ID) {
		if err := steps.ApplyAll(ctx, m.ApplyPorts(), svc, apply); err != nil {
			return err
		}
	}
	// Status is written only when it changes, so quiet passes write nothing
	// (and read the records once: thousands of them are costly to decode).
	all := res
	if len(changed) > 0 || len(apply) > 0 {
		if all, err = m.Repo.Resources(ctx, svc.ID); err != nil {
			return err
		}
	}
	if m.sweepDue(svc.ID) {
		if _, err := steps.SweepOrphans(ctx, m.RemovePorts(), svc.ID, all); err != nil {
			m.Log.Warn("sweep orphaned target resources", "service", svc.ID, "error", err)
		}
	}
	probe := svc.Clone()
	steps.SetStatusFromResources(probe, all)
	if probe.Status == svc.Status && probe.LastKnownGood == svc.LastKnownGood {
		return nil
	}
	_, err = m.Mutate(ctx, svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		if !reconciled(s) {
			return nil
		}
		steps.SetStatusFromResources(s, all)
		return nil
	})
	return err
}

// readTargets reads every resource's object from its target, at most
// TargetConcurrency at once (a service on a thousand Supervisors has
// thousands of objects, each a round trip away); Overlays stay unread.
// The error is the context's when it ended before every read ran.
func (m *core) readTargets(ctx context.Context, res []*lifecycle.Resource) ([]target.Object, []error, error) {
	objs := make([]target.Object, len(res))
	errs := make([]error, len(res))
	err := m.parallel(ctx, len(res), func(ctx context.Context, i int) error {
		r := res[i]
		if r.Kind == "Overlay" {
			return nil
		}
		read := time.Now()
		objs[i], errs[i] = m.Driver.Get(ctx, r.Target)
		m.cfg.Observer.Reconciled(r.Kind, r.Target.System, time.Since(read), errs[i])
		return nil
	})
	return objs, errs, err
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
func sameSpec(obj target.Object, r *lifecycle.Resource) bool {
	if steps.LabelOf(r.Doc, steps.LabelOverlay) != "" {
		return r.ExternalID != ""
	}
	return lifecycle.DocHash(obj.Spec) == r.Hash
}
