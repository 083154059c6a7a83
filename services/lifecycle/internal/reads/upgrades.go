package reads

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/version"
)

// upgradeMemoEntries bounds the memo: one entry per package and installed
// version in use, far fewer than services.
const upgradeMemoEntries = 10_000

// upgradeMemo keeps each (package, installed version)'s available upgrade
// while the catalog's generation stays the same: every GET and every list
// row shows it, and finding it compares every registered version of the
// package (thousands in a large catalog).
type upgradeMemo struct {
	mu  sync.Mutex
	gen uint64
	m   map[upgradeKey]*lifecycle.CatalogEntry // nil value: no upgrade
}

type upgradeKey struct{ name, installed string }

func (u *upgradeMemo) get(gen uint64, k upgradeKey) (*lifecycle.CatalogEntry, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if gen != u.gen {
		return nil, false
	}
	e, ok := u.m[k]
	return e, ok
}

// put records an answer computed from the catalog read at gen; an answer
// from an older generation is dropped (a write came in between).
func (u *upgradeMemo) put(gen uint64, k upgradeKey, e *lifecycle.CatalogEntry) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if gen < u.gen {
		return
	}
	if gen > u.gen || u.m == nil || len(u.m) >= upgradeMemoEntries {
		u.gen, u.m = gen, map[upgradeKey]*lifecycle.CatalogEntry{}
	}
	u.m[k] = e
}

func cloneEntry(e *lifecycle.CatalogEntry) *lifecycle.CatalogEntry {
	if e == nil {
		return nil
	}
	c := *e
	return &c
}

// AvailableUpgrade is the newest registered version newer than the
// installed one, or nil when there is none. The entry is the caller's own.
func (r *Reader) AvailableUpgrade(ctx context.Context, svc *lifecycle.Service) (*lifecycle.CatalogEntry, error) {
	if svc.Name == "" || svc.Version == "" {
		return nil, nil
	}
	gens, memo := r.d.Repo.(lifecycle.CatalogGenerations)
	var gen uint64
	key := upgradeKey{name: svc.Name, installed: svc.Version}
	if memo {
		// Read before the catalog: a write after this read moves the
		// generation, so the answer below is never kept past it.
		gen = gens.CatalogGeneration()
		if e, ok := r.upgrades.get(gen, key); ok {
			return cloneEntry(e), nil
		}
	}
	entries, err := r.d.Repo.Catalog(ctx, svc.Name)
	if err != nil {
		return nil, fmt.Errorf("read the catalog of %s: %w", svc.Name, err)
	}
	best := NewestUpgrade(entries, svc.Version)
	if memo {
		r.upgrades.put(gen, key, cloneEntry(best))
	}
	return best, nil
}

// NewestUpgrade picks, among a name's catalog entries, the newest Ready
// version newer than installed that is not quarantined (nil when there is
// none).
func NewestUpgrade(entries []*lifecycle.CatalogEntry, installed string) *lifecycle.CatalogEntry {
	var best *lifecycle.CatalogEntry
	for _, e := range entries {
		if e.Status != lifecycle.StatusReady || e.Digest == "" || e.Quarantine != nil || version.Compare(e.Version, installed) <= 0 {
			continue
		}
		if best == nil || version.Compare(e.Version, best.Version) > 0 {
			best = e
		}
	}
	return best
}

// catalogEntry finds one registered version of a package.
func (r *Reader) catalogEntry(ctx context.Context, name, version string) (*lifecycle.CatalogEntry, error) {
	entries, err := r.d.Repo.Catalog(ctx, name)
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
