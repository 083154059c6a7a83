package steps

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// letGo applies the finalizer rule to a target object leaving a service:
// with the cleanup finalizer it is deleted on its target, without it it is
// released and left intact.
func letGo(ctx context.Context, driver target.Driver, k target.Key, finalizers []string) error {
	if slices.Contains(finalizers, lifecycle.FinalizerCleanup) {
		return driver.Delete(ctx, k)
	}
	return driver.Release(ctx, k)
}

// forceLetGo is a force delete's one attempt at letting r go. When its
// cleanup fails the resource stays on its target: its finalizers and
// ownership are stripped if the target answers that, and the error says
// what to audit.
func forceLetGo(ctx context.Context, driver target.Driver, r *lifecycle.Resource) error {
	err := letGo(ctx, driver, r.Target, r.Finalizers)
	if err == nil {
		return nil
	}
	if rerr := driver.Release(ctx, r.Target); rerr == nil {
		return fmt.Errorf("left on its target by force delete (cleanup failed: %w; finalizers and ownership removed); audit it and remove it manually", err)
	}
	return fmt.Errorf("left on its target by force delete (cannot be reached: %w); audit it and remove it manually", err)
}

// decommissionTargets removes the target objects of records whose target
// changed, leaving the records (they are about to be replaced). Without a
// cleanup finalizer the object is released instead of deleted.
func decommissionTargets(ctx context.Context, p RemovePorts, res []*lifecycle.Resource) error {
	var mu sync.Mutex
	var failed []error
	_ = Parallel(ctx, p.Log, p.Concurrency, len(res), func(ctx context.Context, i int) error {
		r := res[i]
		if r.Kind == "Overlay" {
			return nil
		}
		if err := letGo(ctx, p.Driver, r.Target, r.Finalizers); err != nil {
			mu.Lock()
			failed = append(failed, fmt.Errorf("%s %s on %s: %w", r.Kind, r.Name, r.Target, err))
			mu.Unlock()
		}
		return nil
	})
	if len(failed) > 0 {
		return fmt.Errorf("decommissioning %d replaced target resource(s) failed (retrying): %w: %w", len(failed), errors.Join(failed...), lifecycle.ErrUnavailable)
	}
	return nil
}

// SweepOrphans removes target objects the service owns that no record
// refers to: left behind by an interrupted change, they would otherwise
// block the next owner. Returns what could not be removed.
func SweepOrphans(ctx context.Context, p RemovePorts, svcID string, records []*lifecycle.Resource) ([]lifecycle.Orphan, error) {
	objs, err := p.Driver.List(ctx, svcID)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, r := range records {
		known[r.Target.String()] = true
	}
	var left []lifecycle.Orphan
	for _, o := range objs {
		if known[o.String()] {
			continue
		}
		if err := letGo(ctx, p.Driver, o.Key, o.Finalizers); err != nil {
			left = append(left, lifecycle.Orphan{Kind: o.Kind, Name: o.Identity, Target: o.Key, Message: err.Error()})
			continue
		}
		p.Log.Info("removed a target resource no record referred to", "service", svcID, "target", o.String())
	}
	return left, nil
}

// RemoveResources deletes resource records. Those with finalizers clean up
// their target first; those without are released (the target keeps them).
// Without force a failed cleanup keeps the record and is retried (the
// error is transient). With force (seed 002: "proceeds immediately with
// resource cleanup and finalizer removal") each resource gets one attempt:
// what its target answers is cleaned up exactly as without force; what it
// cannot be (an unreachable Supervisor) has its record removed anyway and
// is reported as an orphan to audit.
func RemoveResources(ctx context.Context, p RemovePorts, res []*lifecycle.Resource, force bool, orphans *[]lifecycle.Orphan) error {
	var mu sync.Mutex
	var failed []error
	var done []*lifecycle.Resource
	_ = Parallel(ctx, p.Log, p.Concurrency, len(res), func(ctx context.Context, i int) error {
		r := res[i]
		var err error
		switch {
		case r.Kind == "Overlay":
		case force:
			err = forceLetGo(ctx, p.Driver, r)
		default:
			err = letGo(ctx, p.Driver, r.Target, r.Finalizers)
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			done = append(done, r)
		case force:
			done = append(done, r)
			if orphans != nil {
				*orphans = append(*orphans, lifecycle.Orphan{Kind: r.Kind, Name: r.Name, Target: r.Target, Message: err.Error()})
			}
		default:
			failed = append(failed, fmt.Errorf("%s %s on %s: %w", r.Kind, r.Name, r.Target, err))
		}
		return nil
	})
	if err := Chunked(ctx, p.records(), len(done), func(tx lifecycle.Tx, i int) error {
		return tx.DeleteResource(done[i].ServiceID, done[i].ID)
	}); err != nil {
		return err
	}
	if len(failed) > 0 {
		// Cleanup retries until the step's time bound; force-delete skips it.
		return fmt.Errorf("cleaning up %d target resource(s) failed (retrying; DELETE with forceDelete=true skips cleanup): %w: %w",
			len(failed), errors.Join(failed...), lifecycle.ErrUnavailable)
	}
	return nil
}
