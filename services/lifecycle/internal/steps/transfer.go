package steps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// MoveResources hands a service's resources to version per seed 002:
// new ones are created (owned by version, finalizers added), removed ones
// decommissioned (target cleaned up, then the record and its finalizers
// go), kept ones have their ownership and finalizers transferred and are
// re-applied when their configuration changed. Every action is idempotent,
// so a restart re-runs the step safely. A resource that fails leaves the
// step failed: a partial upgrade, Unhealthy, to fix and retry or roll back.
func MoveResources(ctx context.Context, p ApplyPorts, svc *lifecycle.Service, rend *Rendered, version, what string) error {
	return MoveResourcesWhere(ctx, p, svc, rend, version, what, nil)
}

// MoveResourcesWhere moves only the resources in scope (nil: all): a
// rollout's wave, or its rollback, moves its own targets' resources and
// leaves every other one as it is.
func MoveResourcesWhere(ctx context.Context, p ApplyPorts, svc *lifecycle.Service, rend *Rendered, version, what string, inScope func(*lifecycle.Resource) bool) error {
	d, err := diffRendered(ctx, p, svc, rend, version)
	if err != nil {
		return err
	}
	if inScope != nil {
		d = scoped(d, inScope)
	}
	var create, transfer []*lifecycle.Resource
	for _, c := range d.Changes {
		if c.NeedsNewObject() {
			create = append(create, c.Want)
			continue
		}
		old, w := c.Have, c.Want
		w.Adopted, w.ExternalID, w.Status, w.Message, w.LastModified = old.Adopted, old.ExternalID, old.Status, old.Message, old.LastModified
		w.Finalizers = old.Finalizers
		if c.Current(version) {
			continue // done before a restart
		}
		// Recorded at the new version before its target moves: Busy
		// until the apply says how it stands, so a retry (the transfer
		// failed, the process was killed) does not take it for done.
		w.Status, w.Message = target.StatusBusy, "moving to version "+version
		transfer = append(transfer, w)
	}
	if err := retire(ctx, p.remove(), d); err != nil {
		return err
	}
	if err := PutResources(ctx, p.records(), append(slices.Clone(create), transfer...)); err != nil {
		return err
	}
	// Ownership transfer first, so a kept resource is never ownerless.
	if err := transferOwnership(ctx, p.remove(), svc.ID, transfer, version); err != nil {
		return err
	}
	if err := RemoveResources(ctx, p.remove(), d.Removed, false, nil); err != nil {
		return err
	}
	apply := append(create, transfer...)
	if err := ApplyAll(ctx, p, svc, apply); err != nil {
		return err
	}
	var failed []string
	for _, r := range apply {
		if r.Status == target.StatusUnhealthy {
			failed = append(failed, fmt.Sprintf("%s %s%s: %s", r.Kind, r.Name, OnSupervisor(r.Supervisor), r.Message))
		}
	}
	if len(failed) > 0 {
		return lifecycle.Blocked(lifecycle.ErrTypeResource, fmt.Errorf("%s left %d resource(s) failed: %s", what, len(failed), strings.Join(failed, "; ")))
	}
	return nil
}

// transferOwnership hands kept resources to version on their targets, with
// the cleanup finalizer unless they were adopted.
func transferOwnership(ctx context.Context, p RemovePorts, serviceID string, transfer []*lifecycle.Resource, version string) error {
	owner := target.Owner{ServiceID: serviceID, Version: version}
	var mu sync.Mutex
	var transferErrs []string
	_ = Parallel(ctx, p.Log, p.Concurrency, len(transfer), func(ctx context.Context, i int) error {
		r := transfer[i]
		if r.Kind == "Overlay" {
			return nil
		}
		fin := []string{lifecycle.FinalizerCleanup}
		if r.Adopted {
			fin = nil
		}
		if _, err := p.Driver.Transfer(ctx, r.Target, owner, fin); err != nil && !errors.Is(err, target.ErrNotFound) {
			mu.Lock()
			transferErrs = append(transferErrs, fmt.Sprintf("%s %s: %v", r.Kind, r.Name, err))
			mu.Unlock()
			return nil
		}
		r.Finalizers = fin
		return nil
	})
	if len(transferErrs) > 0 {
		return fmt.Errorf("transferring ownership failed: %s: %w", strings.Join(transferErrs, "; "), lifecycle.ErrUnavailable)
	}
	return nil
}

// scoped keeps the changes and removals of the resources in scope (a
// change is in scope by its wanted resource, a removal by its record).
func scoped(d lifecycle.ResourceDiff, inScope func(*lifecycle.Resource) bool) lifecycle.ResourceDiff {
	var out lifecycle.ResourceDiff
	for _, c := range d.Changes {
		if inScope(c.Want) {
			out.Changes = append(out.Changes, c)
		}
	}
	for _, r := range d.Removed {
		if inScope(r) {
			out.Removed = append(out.Removed, r)
		}
	}
	return out
}
