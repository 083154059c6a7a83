package ops

import (
	"context"
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// refuseInFlight refuses a registration that would race another service
// of the same package: one still downloading the same source (its package
// name is not known yet, so the second would only fail later, as a
// nameless Unhealthy service), or one still being deleted (its resources,
// which the new one would render again, are still on the targets).
// docs/lifecycle-semantics.md, rows registering and delete-failed.
func refuseInFlight(ctx context.Context, d *Deps, req CreateRequest) error {
	name := req.Name
	if name == "" {
		if e := catalogEntryOf(ctx, d, req.Source); e != nil {
			name = e.Name
		}
	}
	for _, other := range d.Repo.Services(ctx) {
		switch {
		case other.LifecycleState != lifecycle.StateDecommissioned && other.Name == "" && other.ActiveOperation != "" && other.Source == req.Source:
			return fmt.Errorf("%s is already being registered from this source as service %s: wait for it (GET /v2/vcf-services/%s): %w",
				req.Source, other.ID, other.ID, lifecycle.ErrAlreadyExists)
		case other.LifecycleState == lifecycle.StateDecommissioned && (other.Source == req.Source || (name != "" && other.Name == name)):
			return fmt.Errorf("%s is being deleted (service %s, version %s): wait until it is gone, or delete it with forceDelete=true, then register it again: %w",
				other.Name, other.ID, other.Version, lifecycle.ErrAlreadyExists)
		}
	}
	return nil
}

// catalogEntryOf is the catalog's entry for a source, or nil.
func catalogEntryOf(ctx context.Context, d *Deps, source string) *lifecycle.CatalogEntry {
	entries, err := d.Repo.Catalog(ctx, "")
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if e.Source == source {
			return e
		}
	}
	return nil
}
