package reads

import (
	"sync"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// listMemoEntries bounds the lists (filter and sort) kept per snapshot.
const listMemoEntries = 64

// listMemo keeps, for one snapshot of the services (Repository.Services,
// which is replaced, never changed, when a service changes), the services
// each filter matched, in the order of each sort asked, as far as a page
// needed it: a UI pages through the same sorted, filtered list and a
// dashboard polls it, so only the first request after a change pays for
// the scan of every service, and a page already ordered costs no sort.
type listMemo struct {
	mu       sync.Mutex
	snapshot []*lifecycle.Service
	lists    map[listKey]listEntry
}

type listKey struct {
	filter, sortField string
	desc              bool
}

// listEntry is read-only once kept: a deeper page sorts a copy.
type listEntry struct {
	services []*lifecycle.Service
	ordered  int // services[:ordered] are in order
}

// sameSnapshot: one snapshot is one backing array. The memo holds the
// one it keeps, so that array cannot be reused for another.
func sameSnapshot(a, b []*lifecycle.Service) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func (l *listMemo) get(all []*lifecycle.Service, k listKey) (listEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !sameSnapshot(l.snapshot, all) {
		return listEntry{}, false
	}
	e, ok := l.lists[k]
	return e, ok
}

func (l *listMemo) put(all []*lifecycle.Service, k listKey, e listEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lists == nil || !sameSnapshot(l.snapshot, all) || len(l.lists) >= listMemoEntries {
		l.snapshot, l.lists = all, map[listKey]listEntry{}
	}
	l.lists[k] = e
}
