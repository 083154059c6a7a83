package steps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/vcfsm/vcfsm/platform/safe"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Parallel runs fn for 0..n-1 with at most limit at once and returns the
// first error; a panic in fn is logged to log and returned as an error.
func Parallel(ctx context.Context, log *slog.Logger, limit, n int, fn func(context.Context, int) error) error {
	sem := make(chan struct{}, limit)
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
			if err := safe.Call(log, "a parallel target call", func() error { return fn(ctx, i) }); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	return first
}

// diffRendered places a render owned by version and compares it with the
// service's records.
func diffRendered(ctx context.Context, p ApplyPorts, svc *lifecycle.Service, rend *Rendered, version string) (lifecycle.ResourceDiff, error) {
	sups := rend.Supervisors()
	want, err := rend.Place(svc, version, p.Now())
	if err != nil {
		return lifecycle.ResourceDiff{}, lifecycle.Blocked(lifecycle.ErrTypeInstall, err)
	}
	// The Supervisors the version runs on are recorded with its resources:
	// the hook and Supervisor-upgrade evaluation read them later.
	if !slices.Equal(svc.Supervisors, sups) {
		if _, err := p.Store.Mutate(ctx, svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
			s.Supervisors = sups
			return nil
		}); err != nil {
			return lifecycle.ResourceDiff{}, err
		}
		svc.Supervisors = sups
	}
	have, err := p.Repo.Resources(ctx, svc.ID)
	if err != nil {
		return lifecycle.ResourceDiff{}, err
	}
	return lifecycle.DiffResources(have, want), nil
}

// retire removes the target objects of retargeted records before the
// records that point at them are replaced: a restart in between finds the
// old records and retries.
func retire(ctx context.Context, p RemovePorts, d lifecycle.ResourceDiff) error {
	var old []*lifecycle.Resource
	for _, c := range d.Changes {
		if c.Retargeted {
			old = append(old, c.Have)
		}
	}
	return decommissionTargets(ctx, p, old)
}

// ApplyRendered makes the service's resource records match a render owned
// by version: new ones are recorded and applied, changed ones re-applied,
// removed ones cleaned up. Target failures leave resources Unhealthy for
// the controllers to retry rather than failing the operation.
func ApplyRendered(ctx context.Context, p ApplyPorts, svc *lifecycle.Service, rend *Rendered, version string) error {
	d, err := diffRendered(ctx, p, svc, rend, version)
	if err != nil {
		return err
	}
	var apply []*lifecycle.Resource
	for _, c := range d.Changes {
		if !c.NeedsNewObject() {
			c.Want.Finalizers, c.Want.Adopted, c.Want.ExternalID = c.Have.Finalizers, c.Have.Adopted, c.Have.ExternalID
			if c.Current(version) {
				continue
			}
		}
		apply = append(apply, c.Want)
	}
	if err := retire(ctx, p.remove(), d); err != nil {
		return err
	}
	// Record what is about to be applied before touching a target.
	if err := PutResources(ctx, p.records(), apply); err != nil {
		return err
	}
	if err := RemoveResources(ctx, p.remove(), d.Removed, false, nil); err != nil {
		return err
	}
	if err := ApplyAll(ctx, p, svc, apply); err != nil {
		return err
	}
	return RefreshStatus(ctx, p.Repo, p.Store, svc.ID)
}

// ApplyAll applies resources to their targets in parallel and records the
// outcome of each; the error is the recording's (target failures are on
// the resources).
func ApplyAll(ctx context.Context, p ApplyPorts, svc *lifecycle.Service, resources []*lifecycle.Resource) error {
	overlays := indexOverlays(ctx, p.Repo, svc.ID)
	progress := newApplyProgress(p.Store, svc, resources)
	_ = Parallel(ctx, p.Log, p.Concurrency, len(resources), func(ctx context.Context, i int) error {
		applyOne(ctx, p, svc, resources[i], overlays)
		progress.applied(ctx, resources[i])
		return nil
	})
	if err := PutResources(ctx, p.records(), resources); err != nil {
		return fmt.Errorf("record the outcome of applying %d resource(s): %w", len(resources), err)
	}
	return nil
}

// applyOne applies one resource and records its status on it.
func applyOne(ctx context.Context, p ApplyPorts, svc *lifecycle.Service, r *lifecycle.Resource, overlays *overlayIndex) {
	now := p.Now()
	r.Unreachable = false
	if r.Kind == "Overlay" {
		r.Status, r.Message = overlays.status(r)
		r.LastModified = now
		return
	}
	doc, status, msg, ok := withOverlay(ctx, p.Renderer, r, overlays)
	if !ok {
		r.Status, r.Message, r.LastModified = status, msg, now
		return
	}
	owner := target.Owner{ServiceID: svc.ID, Version: r.OwnerVersion}
	d := target.Desired{Key: r.Target, Namespace: r.Namespace, Spec: doc, Owner: owner, Finalizers: r.Finalizers}
	if d.Finalizers == nil && !r.Adopted {
		d.Finalizers = []string{lifecycle.FinalizerCleanup}
	}
	obj, err := p.Driver.Apply(ctx, d)
	if err != nil {
		r.Status = target.StatusUnhealthy
		switch {
		case errors.Is(err, target.ErrUnreachable):
			r.Status, r.Unreachable = target.StatusBusy, true
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
		if _, err := p.Driver.Transfer(ctx, r.Target, owner, nil); err == nil {
			obj.Finalizers = nil
		}
	}
	r.Finalizers = slices.Clone(obj.Finalizers)
	if r.Finalizers == nil && !r.Adopted {
		r.Finalizers = []string{lifecycle.FinalizerCleanup}
	}
	r.ExternalID = obj.ExternalID
	r.ReadyConditions = obj.ReadyConditions
	r.Generation = obj.Generation
	if r.Status != obj.Status || r.Message != obj.Message {
		r.LastModified = now
	}
	r.Status, r.Message = obj.Status, obj.Message
	if status != "" {
		r.Message = msg
	}
}
