// Package controllers keeps every active service's resources in shape on
// their targets: an event-driven work queue (queue.go) fed by the store's
// commits, the targets' change feed and timers; a pass reconciles one
// service (re-applies what is missing or drifted, polls what is pending,
// aggregates the status, sweeps orphans) and decides its automatic
// upgrade; leadership (leader.go) runs the loop on one replica at a time.
package controllers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/platform/safe"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/commit"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"k8s.io/client-go/util/workqueue"
)

// The controllers are event-driven: a rate-limited work queue keyed by
// service id (client-go's util/workqueue) is fed by the store's commits
// (every service a transaction wrote), by the target driver's change feed
// (target.ChangeFeed: an object a service owns changed, or the targets'
// facts did), by operation ends, and by timers: a service that is not
// Healthy is looked at again every Interval (pending resources are polled,
// failed applies retried), a failing reconcile backs off per service, a
// blocked automatic upgrade is retried after its delay. A quiet Healthy
// service costs nothing. Without a change feed, Healthy services are
// re-read every 15 periods instead, so drift behind their back is still
// found.

// Upgrades finds the version a service's automatic upgrade moves to (the
// read side): the newest compatible one it may pick, or nil.
type Upgrades interface {
	AutoUpgradeTarget(ctx context.Context, svc *lifecycle.Service) (*lifecycle.CatalogEntry, error)
}

// Upgrader starts an automatic upgrade (the operations).
type Upgrader interface {
	StartAutoUpgrade(ctx context.Context, id string, to *lifecycle.CatalogEntry) error
}

// Observer is told of each read of a resource on its target (err is the
// read's error; target.ErrNotFound means it must be re-applied).
type Observer interface {
	Reconciled(kind, system string, d time.Duration, err error)
}

// Deps are what the controllers reach. Ports.Store is Writer.
type Deps struct {
	Repo     lifecycle.Repository
	Driver   target.Driver
	Ports    steps.Ports
	Writer   *commit.Writer
	Queue    *Queue
	Upgrades Upgrades
	Upgrader Upgrader
	Observer Observer
	// Leadership, when set, runs the loop only on the elected replica.
	Leadership Leadership
	// Interval is the period of the timers above; RefreshInterval, when
	// set, reloads the repository's view that often (replicas sharing an
	// etcd without a feed); RetryBackoff spaces leadership campaigns.
	Interval, RefreshInterval, RetryBackoff time.Duration
	Log                                     *slog.Logger
	Now                                     func() time.Time
}

// Controller runs the controller passes.
type Controller struct {
	d Deps
	// feed: the driver reports changes on its targets (target.ChangeFeed).
	feed bool

	mu sync.Mutex
	// lastSweep spaces the orphan sweeps per service.
	lastSweep map[string]time.Time
}

// New returns the controllers over d; Run runs them.
func New(d Deps) *Controller {
	_, feed := d.Driver.(target.ChangeFeed)
	return &Controller{d: d, feed: feed, lastSweep: map[string]time.Time{}}
}

// controllerWorkers reconcile distinct services in parallel; one service
// is never reconciled by two workers at once (the queue's rule).
const controllerWorkers = 2

// healthyRecheck: without a change feed, a Healthy service's targets are
// re-read every 15 periods.
const healthyRecheck = 15

// ReconcileAll queues every service for a controller pass.
func (c *Controller) ReconcileAll(ctx context.Context) {
	for _, svc := range c.d.Repo.Services(ctx) {
		c.d.Queue.Add(svc.ID)
	}
}

// onTargetChange is the driver's change feed.
func (c *Controller) onTargetChange(ch target.Change) {
	if ch.ServiceID == "" {
		c.ReconcileAll(context.Background())
		return
	}
	c.d.Queue.Kick(ch.ServiceID)
}

// loop runs one term of the controller workers, on a fresh queue, until
// ctx ends. With an etcd store shared by replicas it also reloads the
// service view periodically and queues every service after each reload.
func (c *Controller) loop(ctx context.Context) {
	wq, shutDown := c.d.Queue.open()
	stop := context.AfterFunc(ctx, shutDown)
	defer stop()
	if feed, ok := c.d.Driver.(target.ChangeFeed); ok {
		feed.Watch(ctx, c.onTargetChange)
	}
	c.queueAtStart(ctx, wq)
	var wg sync.WaitGroup
	for range controllerWorkers {
		wg.Go(func() {
			for c.processNext(ctx, wq) {
			}
		})
	}
	defer wg.Wait()
	r, canRefresh := c.d.Repo.(interface{ Refresh(context.Context) error })
	if !canRefresh || c.d.RefreshInterval <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(c.d.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
				c.d.Log.Warn("refresh the service view", "error", err)
				continue
			}
			c.ReconcileAll(ctx)
		}
	}
}

// queueAtStart queues what needs a pass after a start: services the
// controllers keep that are not Healthy, automatic upgrades, and — without
// a change feed — everything.
func (c *Controller) queueAtStart(ctx context.Context, wq workqueue.TypedRateLimitingInterface[string]) {
	for _, svc := range c.d.Repo.Services(ctx) {
		if !c.feed || svc.AutoUpgrade || (reconciled(svc) && svc.Status != lifecycle.StatusHealthy) {
			wq.Add(svc.ID)
		}
	}
}

// processNext runs one queued service's pass; false once the queue shut
// down.
func (c *Controller) processNext(ctx context.Context, wq workqueue.TypedRateLimitingInterface[string]) bool {
	id, shutdown := wq.Get()
	if shutdown {
		return false
	}
	defer wq.Done(id)
	c.reconcileKey(ctx, wq, id)
	return true
}

// reconcileKey is one controller pass over one service: the automatic
// upgrade check, then the reconcile when the service is one the
// controllers keep, then when to look again.
func (c *Controller) reconcileKey(ctx context.Context, wq workqueue.TypedRateLimitingInterface[string], id string) {
	svc, err := c.d.Repo.Service(ctx, id)
	if err != nil {
		wq.Forget(id) // deleted
		return
	}
	_ = safe.Call(c.d.Log, "auto-upgrade check of "+id, func() error { c.maybeAutoUpgrade(ctx, svc); return nil })
	if !reconciled(svc) {
		wq.Forget(id) // its operation's end or its next change queues it
		return
	}
	c.d.Queue.working(id, true)
	// A panicking reconcile fails that reconcile only.
	err = safe.Call(c.d.Log, "reconcile of "+id, func() error { return c.reconcile(ctx, svc) })
	c.d.Queue.working(id, false)
	if err != nil {
		if ctx.Err() == nil {
			c.d.Log.Warn("reconcile", "service", id, "error", err)
			wq.AddRateLimited(id)
		}
		return
	}
	wq.Forget(id)
	after, err := c.d.Repo.Service(ctx, id)
	switch {
	case err != nil:
	case after.Status != lifecycle.StatusHealthy:
		wq.AddAfter(id, c.d.Interval)
	case !c.feed:
		wq.AddAfter(id, healthyRecheck*c.d.Interval)
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
func (c *Controller) reconcile(ctx context.Context, svc *lifecycle.Service) error {
	res, err := c.d.Repo.Resources(ctx, svc.ID)
	if err != nil {
		return err
	}
	objs, errs, err := c.readTargets(ctx, res)
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
			if r.Status != target.StatusBusy || !r.Unreachable {
				r.Status, r.Message, r.LastModified = target.StatusBusy, "target unreachable: "+err.Error(), c.d.Now()
				r.Unreachable = true
				changed = append(changed, r)
			}
		case obj.Owner.ServiceID != svc.ID, r.Status == target.StatusUnhealthy, !sameSpec(obj, r):
			apply = append(apply, r)
		case r.Unreachable, obj.Status != r.Status || obj.Message != r.Message && r.Status != target.StatusHealthy:
			r.Status, r.Message, r.LastModified = obj.Status, obj.Message, c.d.Now()
			r.Unreachable = false
			r.ReadyConditions = obj.ReadyConditions
			changed = append(changed, r)
		}
	}
	if len(changed) > 0 {
		if err := steps.PutResources(ctx, c.d.Ports.Records(), changed); err != nil {
			return err
		}
	}
	if len(apply) > 0 && c.stillReconciled(ctx, svc.ID) {
		if err := steps.ApplyAll(ctx, c.d.Ports.Apply(), svc, apply); err != nil {
			return err
		}
	}
	// Status is written only when it changes, so quiet passes write nothing
	// (and read the records once: thousands of them are costly to decode).
	all := res
	if len(changed) > 0 || len(apply) > 0 {
		if all, err = c.d.Repo.Resources(ctx, svc.ID); err != nil {
			return err
		}
	}
	if c.sweepDue(svc.ID) {
		if _, err := steps.SweepOrphans(ctx, c.d.Ports.Remove(), svc.ID, all); err != nil {
			c.d.Log.Warn("sweep orphaned target resources", "service", svc.ID, "error", err)
		}
	}
	probe := svc.Clone()
	steps.SetStatusFromResources(probe, all)
	if probe.Status == svc.Status && probe.LastKnownGood == svc.LastKnownGood {
		return nil
	}
	_, err = c.d.Writer.Mutate(ctx, svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
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
func (c *Controller) readTargets(ctx context.Context, res []*lifecycle.Resource) ([]target.Object, []error, error) {
	objs := make([]target.Object, len(res))
	errs := make([]error, len(res))
	err := steps.Parallel(ctx, c.d.Log, c.d.Ports.Concurrency, len(res), func(ctx context.Context, i int) error {
		r := res[i]
		if r.Kind == "Overlay" {
			return nil
		}
		read := time.Now()
		objs[i], errs[i] = c.d.Driver.Get(ctx, r.Target)
		c.d.Observer.Reconciled(r.Kind, r.Target.System, time.Since(read), errs[i])
		return nil
	})
	return objs, errs, err
}

// sweepDue spaces out orphan sweeps (they list the targets): once per
// 30 controller periods per service.
func (c *Controller) sweepDue(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.d.Now()
	if last, ok := c.lastSweep[id]; ok && now.Sub(last) < 30*c.d.Interval {
		return false
	}
	c.lastSweep[id] = now
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

// maybeAutoUpgrade starts an upgrade to the newest compatible registered
// version when the service asks for automatic upgrades. A version whose
// automatic upgrade failed (quarantined) or that the service was rolled
// back from is not picked again until an administrator clears it.
func (c *Controller) maybeAutoUpgrade(ctx context.Context, svc *lifecycle.Service) {
	if !svc.AutoUpgrade || svc.LifecycleState != lifecycle.StateActive || svc.ActiveOperation != "" || svc.Maintenance || svc.Digest == "" {
		return
	}
	next, err := c.d.Upgrades.AutoUpgradeTarget(ctx, svc)
	if err != nil {
		c.d.Log.Warn("automatic upgrade: read the catalog", "service", svc.ID, "error", err)
		return
	}
	if next == nil {
		return
	}
	if err := c.d.Upgrader.StartAutoUpgrade(ctx, svc.ID, next); err != nil {
		c.d.Log.Warn("automatic upgrade", "service", svc.ID, "error", err)
	}
}
