package manager

import (
	"sync"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
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
