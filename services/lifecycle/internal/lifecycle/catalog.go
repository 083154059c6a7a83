package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/version"
)

// RegisterVersion downloads and validates a bundle into the catalog,
// synchronously: validation failures are InvalidArgument (400).
func (m *Manager) RegisterVersion(ctx context.Context, source string, builtIn bool) (*CatalogEntry, error) {
	if err := m.ValidateSource(source); err != nil {
		return nil, err
	}
	b, err := m.bundles.Fetch(ctx, source, nil)
	if err != nil {
		return nil, invalidArgument("register version", err)
	}
	if b.Package.RefName == "" || b.Package.Version == "" {
		return nil, fmt.Errorf("register %s: package.yml must carry spec.refName and spec.version: %w", source, ErrInvalidArgument)
	}
	probe := &Service{ID: "catalog", Name: b.Package.RefName, Version: b.Package.Version, Digest: b.Digest, BuiltIn: builtIn, Namespace: Namespace(b.Package.RefName)}
	if _, err := m.validateBundle(ctx, probe, b); err != nil {
		if IsBlocked(err) {
			return nil, invalidArgument("register "+source, err)
		}
		return nil, err
	}
	entry := &CatalogEntry{Name: b.Package.RefName, Version: b.Package.Version, Source: source, Digest: b.Digest,
		Status: StatusReady, RegisteredAt: m.now(), BuiltIn: builtIn}
	if err := m.update(ctx, func(tx Tx) error { return tx.PutCatalog(entry) }); err != nil {
		return nil, err
	}
	m.kickControllers()
	return entry, nil
}

// IsBlocked reports a non-retryable step failure.
func IsBlocked(err error) bool {
	var b *blockedError
	return errors.As(err, &b)
}

// Versions lists the catalog.
func (m *Manager) Versions(ctx context.Context, name string) ([]*CatalogEntry, error) {
	return m.repo.Catalog(ctx, name)
}

// AvailableUpgrade is the newest registered version newer than the
// installed one, or nil when there is none.
func (m *core) AvailableUpgrade(ctx context.Context, svc *Service) (*CatalogEntry, error) {
	if svc.Name == "" || svc.Version == "" {
		return nil, nil
	}
	entries, err := m.repo.Catalog(ctx, svc.Name)
	if err != nil {
		return nil, fmt.Errorf("read the catalog of %s: %w", svc.Name, err)
	}
	return NewestUpgrade(entries, svc.Version), nil
}

// NewestUpgrade picks, among a name's catalog entries, the newest Ready
// version newer than installed (nil when there is none).
func NewestUpgrade(entries []*CatalogEntry, installed string) *CatalogEntry {
	var best *CatalogEntry
	for _, e := range entries {
		if e.Status != StatusReady || e.Digest == "" || version.Compare(e.Version, installed) <= 0 {
			continue
		}
		if best == nil || version.Compare(e.Version, best.Version) > 0 {
			best = e
		}
	}
	return best
}

func (m *core) catalogEntry(ctx context.Context, name, version string) (*CatalogEntry, error) {
	entries, err := m.repo.Catalog(ctx, name)
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
	return nil, fmt.Errorf("version %s of %s is not registered (registered: %s): %w", version, name, strings.Join(known, ", "), ErrInvalidArgument)
}
