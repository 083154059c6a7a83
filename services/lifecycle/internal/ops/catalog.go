package ops

import (
	"context"
	"errors"
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// RegisterVersion downloads and validates a bundle into the catalog,
// synchronously: validation failures are InvalidArgument (400).
// A builtIn registration records who declared it (the server's auth table
// lets only an administrator).
func (r *Runner) RegisterVersion(ctx context.Context, source string, builtIn bool, by string) (*lifecycle.CatalogEntry, error) {
	if err := lifecycle.ValidateSource(r.d.Bundles, source); err != nil {
		return nil, err
	}
	b, err := r.d.Bundles.Fetch(ctx, source, nil)
	if err != nil {
		return nil, lifecycle.InvalidArgument("register version", err)
	}
	if b.Package.RefName == "" || b.Package.Version == "" {
		return nil, fmt.Errorf("register %s: package.yml must carry spec.refName and spec.version: %w", source, lifecycle.ErrInvalidArgument)
	}
	probe := &lifecycle.Service{ID: "catalog", Name: b.Package.RefName, Version: b.Package.Version, Digest: b.Digest, BuiltIn: builtIn, Namespace: lifecycle.Namespace(b.Package.RefName)}
	if _, err := steps.ValidateBundle(ctx, r.d.Ports.Render(), r.d.Ports.Peers.Compatibility, probe, b); err != nil {
		var blocked *lifecycle.BlockedError
		if errors.As(err, &blocked) {
			return nil, lifecycle.InvalidArgument("register "+source, err)
		}
		return nil, err
	}
	entry := &lifecycle.CatalogEntry{Name: b.Package.RefName, Version: b.Package.Version, Source: source, Digest: b.Digest,
		Status: lifecycle.StatusReady, RegisteredAt: r.d.Now(), BuiltIn: builtIn, Constraints: steps.CatalogConstraints(b)}
	if builtIn {
		entry.BuiltInBy = builtInRecord(by, r.d.Now())
	}
	if err := r.d.Writer.Update(ctx, func(tx lifecycle.Tx) error { return putCatalog(tx, entry) }); err != nil {
		return nil, err
	}
	// A new version: the services of that package check for an automatic
	// upgrade.
	for _, svc := range r.d.Repo.Services(ctx) {
		if svc.Name == entry.Name {
			r.d.Kick(svc.ID)
		}
	}
	return entry, nil
}
