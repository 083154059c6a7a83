package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/vcfsm/vcfsm/platform/safe"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// parallel runs fn for 0..n-1 with at most TargetConcurrency at once and
// returns the first error.
func (m *core) parallel(ctx context.Context, n int, fn func(context.Context, int) error) error {
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
			// A panic here would escape the step's recovery: contain it.
			if err := safe.Call(m.log, "a parallel target call", func() error { return fn(ctx, i) }); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}

// resourceDiff is how a service's resource records compare with a new
// render: the one diff behind activation, reconfiguration, upgrade,
// rollback and the upgrade plan.
type resourceDiff struct {
	// changes has one entry per wanted resource, in render order.
	changes []resourceChange
	// removed are records no longer wanted.
	removed []*lifecycle.Resource
}

// resourceChange pairs a wanted resource with its record, if any.
type resourceChange struct {
	want, have *lifecycle.Resource
	// retargeted: the record's target identity changed (e.g. a registry's
	// endpoint): the old object goes and a new one is created.
	retargeted bool
}

// needsNewObject: no record yet, or the old object is being replaced.
func (c resourceChange) needsNewObject() bool { return c.have == nil || c.retargeted }

// current: the record already is the wanted resource, applied and Healthy
// under version (done before a restart).
func (c resourceChange) current(version string) bool {
	return c.have.OwnerVersion == version && c.have.Hash == c.want.Hash && c.have.Status == target.StatusHealthy
}

func diffResources(have, want []*lifecycle.Resource) resourceDiff {
	existing := make(map[string]*lifecycle.Resource, len(have))
	for _, r := range have {
		existing[r.ID] = r
	}
	var d resourceDiff
	wanted := make(map[string]bool, len(want))
	for _, w := range want {
		wanted[w.ID] = true
		old := existing[w.ID]
		d.changes = append(d.changes, resourceChange{want: w, have: old, retargeted: old != nil && old.Target != w.Target})
	}
	for _, r := range have {
		if !wanted[r.ID] {
			d.removed = append(d.removed, r)
		}
	}
	return d
}

// diffRendered places a render owned by version and compares it with the
// service's records.
func (m *core) diffRendered(ctx context.Context, svc *lifecycle.Service, rend *rendered, version string) (resourceDiff, error) {
	sups := rend.supervisors()
	want, err := rend.place(svc, version, m.now())
	if err != nil {
		return resourceDiff{}, lifecycle.Blocked(lifecycle.ErrTypeInstall, err)
	}
	// The Supervisors the version runs on are recorded with its resources:
	// the hook and Supervisor-upgrade evaluation read them later.
	if !slices.Equal(svc.Supervisors, sups) {
		if _, err := m.Mutate(ctx, svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
			s.Supervisors = sups
			return nil
		}); err != nil {
			return resourceDiff{}, err
		}
		svc.Supervisors = sups
	}
	have, err := m.repo.Resources(ctx, svc.ID)
	if err != nil {
		return resourceDiff{}, err
	}
	return diffResources(have, want), nil
}

// retire removes the target objects of retargeted records before the
// records that point at them are replaced: a restart in between finds the
// old records and retries.
func (m *core) retire(ctx context.Context, d resourceDiff) error {
	var old []*lifecycle.Resource
	for _, c := range d.changes {
		if c.retargeted {
			old = append(old, c.have)
		}
	}
	return m.decommissionTargets(ctx, old)
}

// putResources records resources, at most maxResourceWrites per
// transaction (see chunked).
func (m *core) putResources(ctx context.Context, res []*lifecycle.Resource) error {
	return m.chunked(ctx, len(res), func(tx lifecycle.Tx, i int) error { return tx.PutResource(res[i]) })
}

// applyRendered makes the service's resource records match a render owned
// by version: new ones are recorded and applied, changed ones re-applied,
// removed ones cleaned up. Target failures leave resources Unhealthy for
// the controllers to retry rather than failing the operation.
func (m *core) applyRendered(ctx context.Context, svc *lifecycle.Service, rend *rendered, version string) error {
	d, err := m.diffRendered(ctx, svc, rend, version)
	if err != nil {
		return err
	}
	var apply []*lifecycle.Resource
	for _, c := range d.changes {
		if !c.needsNewObject() {
			c.want.Finalizers, c.want.Adopted, c.want.ExternalID = c.have.Finalizers, c.have.Adopted, c.have.ExternalID
			if c.current(version) {
				continue
			}
		}
		apply = append(apply, c.want)
	}
	if err := m.retire(ctx, d); err != nil {
		return err
	}
	// Record what is about to be applied before touching a target.
	if err := m.putResources(ctx, apply); err != nil {
		return err
	}
	if err := m.removeResources(ctx, svc, d.removed, false, nil); err != nil {
		return err
	}
	if err := m.applyAll(ctx, svc, apply); err != nil {
		return err
	}
	return steps.RefreshStatus(ctx, m.repo, m, svc.ID)
}

// applyAll applies resources to their targets in parallel and records the
// outcome of each; the error is the recording's (target failures are on
// the resources).
func (m *core) applyAll(ctx context.Context, svc *lifecycle.Service, resources []*lifecycle.Resource) error {
	overlays := m.overlayIndex(ctx, svc.ID)
	progress := m.newApplyProgress(svc, resources)
	_ = m.parallel(ctx, len(resources), func(ctx context.Context, i int) error {
		m.applyOne(ctx, svc, resources[i], overlays)
		progress.applied(ctx, resources[i])
		return nil
	})
	if err := m.putResources(ctx, resources); err != nil {
		return fmt.Errorf("record the outcome of applying %d resource(s): %w", len(resources), err)
	}
	return nil
}

// applyOne applies one resource and records its status on it.
func (m *core) applyOne(ctx context.Context, svc *lifecycle.Service, r *lifecycle.Resource, overlays *overlayIndex) {
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
		d.Finalizers = []string{lifecycle.FinalizerCleanup}
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
		r.Finalizers = []string{lifecycle.FinalizerCleanup}
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
