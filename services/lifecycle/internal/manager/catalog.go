package manager

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/version"
)

// RegisterVersion downloads and validates a bundle into the catalog,
// synchronously: validation failures are InvalidArgument (400).
func (m *Manager) RegisterVersion(ctx context.Context, source string, builtIn bool) (*lifecycle.CatalogEntry, error) {
	if err := m.ValidateSource(source); err != nil {
		return nil, err
	}
	b, err := m.Bundles.Fetch(ctx, source, nil)
	if err != nil {
		return nil, lifecycle.InvalidArgument("register version", err)
	}
	if b.Package.RefName == "" || b.Package.Version == "" {
		return nil, fmt.Errorf("register %s: package.yml must carry spec.refName and spec.version: %w", source, lifecycle.ErrInvalidArgument)
	}
	probe := &lifecycle.Service{ID: "catalog", Name: b.Package.RefName, Version: b.Package.Version, Digest: b.Digest, BuiltIn: builtIn, Namespace: Namespace(b.Package.RefName)}
	if _, err := steps.ValidateBundle(ctx, m.RenderPorts(), m.Peers.Compatibility, probe, b); err != nil {
		if IsBlocked(err) {
			return nil, lifecycle.InvalidArgument("register "+source, err)
		}
		return nil, err
	}
	entry := &lifecycle.CatalogEntry{Name: b.Package.RefName, Version: b.Package.Version, Source: source, Digest: b.Digest,
		Status: lifecycle.StatusReady, RegisteredAt: m.now(), BuiltIn: builtIn, Constraints: catalogConstraints(b)}
	if err := m.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutCatalog(entry) }); err != nil {
		return nil, err
	}
	// A new version: the services of that package check for an automatic
	// upgrade.
	for _, svc := range m.Repo.Services(ctx) {
		if svc.Name == entry.Name {
			m.queue.Add(svc.ID)
		}
	}
	return entry, nil
}

// IsBlocked reports a non-retryable step failure.
func IsBlocked(err error) bool {
	var b *lifecycle.BlockedError
	return errors.As(err, &b)
}

// Versions lists the catalog.
func (m *Manager) Versions(ctx context.Context, name string) ([]*lifecycle.CatalogEntry, error) {
	return m.Repo.Catalog(ctx, name)
}

// AvailableUpgrade is the newest registered version newer than the
// installed one, or nil when there is none. The entry is the caller's own.
func (m *core) AvailableUpgrade(ctx context.Context, svc *lifecycle.Service) (*lifecycle.CatalogEntry, error) {
	if svc.Name == "" || svc.Version == "" {
		return nil, nil
	}
	gens, memo := m.Repo.(lifecycle.CatalogGenerations)
	var gen uint64
	key := upgradeKey{name: svc.Name, installed: svc.Version}
	if memo {
		// Read before the catalog: a write after this read moves the
		// generation, so the answer below is never kept past it.
		gen = gens.CatalogGeneration()
		if e, ok := m.upgrades.get(gen, key); ok {
			return cloneEntry(e), nil
		}
	}
	entries, err := m.Repo.Catalog(ctx, svc.Name)
	if err != nil {
		return nil, fmt.Errorf("read the catalog of %s: %w", svc.Name, err)
	}
	best := NewestUpgrade(entries, svc.Version)
	if memo {
		m.upgrades.put(gen, key, cloneEntry(best))
	}
	return best, nil
}

// NewestUpgrade picks, among a name's catalog entries, the newest Ready
// version newer than installed (nil when there is none).
func NewestUpgrade(entries []*lifecycle.CatalogEntry, installed string) *lifecycle.CatalogEntry {
	var best *lifecycle.CatalogEntry
	for _, e := range entries {
		if e.Status != lifecycle.StatusReady || e.Digest == "" || version.Compare(e.Version, installed) <= 0 {
			continue
		}
		if best == nil || version.Compare(e.Version, best.Version) > 0 {
			best = e
		}
	}
	return best
}

func (m *core) catalogEntry(ctx context.Context, name, version string) (*lifecycle.CatalogEntry, error) {
	entries, err := m.Repo.Catalog(ctx, name)
	if err != nil {
		return nil, err
	}
	var known []string
	for _, e := range entries {
		if e.Version == version && e.Digest != "" {
			return e, nil
		}
		known = append(known, e.Version)
	}
	return nil, fmt.Errorf("version %s of %s is not registered (registered: %s): %w", version, name, strings.Join(known, ", "), lifecycle.ErrInvalidArgument)
}

// catalogConstraints are what a catalog entry records of its bundle for
// path planning.
func catalogConstraints(b *bundle.Bundle) *lifecycle.Constraints {
	c := steps.PackageVersion(b, "", false).Constraints
	return &c
}
