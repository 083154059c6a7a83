package reads

import (
	"sync"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fiql"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// listMemoEntries bounds the lists (filter and sort) kept.
const listMemoEntries = 64

// listMemo keeps, for each filter and sort asked, which services it
// matched in the snapshot it last saw (Repository.Services, replaced, never
// changed, when a service changes), in the order of the sort as far as a
// page needed it. A UI pages through the same sorted, filtered list and a
// dashboard polls it: between changes a page costs no filter and no sort,
// and after a change only the services that changed are matched again —
// the repository keeps every other service at its position, so comparing
// the two snapshots position by position finds them — instead of the
// filter running over every service.
type listMemo struct {
	mu    sync.Mutex
	lists map[listKey]listEntry
}

type listKey struct {
	filter, sortField string
	desc              bool
}

// listEntry is read-only once kept: a deeper page sorts a copy, a newer
// snapshot makes a new entry.
type listEntry struct {
	snapshot []*lifecycle.Service // what it was computed over
	in       []bool               // in[i]: snapshot[i] is listed and matches
	services []*lifecycle.Service // the matches
	ordered  int                  // services[:ordered] are in order
}

// sameSnapshot: one snapshot is one backing array. The memo holds the
// one it keeps, so that array cannot be reused for another.
func sameSnapshot(a, b []*lifecycle.Service) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func (l *listMemo) get(k listKey) (listEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.lists[k]
	return e, ok
}

func (l *listMemo) put(k listKey, e listEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, kept := l.lists[k]; l.lists == nil || (!kept && len(l.lists) >= listMemoEntries) {
		l.lists = map[listKey]listEntry{}
	}
	l.lists[k] = e
}

// matchAll is the entry of filter over all, every service matched.
func matchAll(all []*lifecycle.Service, filter fiql.Node) listEntry {
	e := listEntry{snapshot: all, in: make([]bool, len(all))}
	m := newMatcher(filter)
	for i, s := range all {
		e.in[i] = m.lists(s)
	}
	e.services = e.collect()
	return e
}

// follow is e moved to all: only the services not at the same position
// in both snapshots are matched again. It is right whatever moved (a
// reload that changed every position costs what matchAll does).
func (e listEntry) follow(all []*lifecycle.Service, filter fiql.Node) listEntry {
	next := listEntry{snapshot: all, in: make([]bool, len(all))}
	copy(next.in, e.in)
	m := newMatcher(filter)
	for i, s := range all {
		if i >= len(e.snapshot) || s != e.snapshot[i] {
			next.in[i] = m.lists(s)
		}
	}
	next.services = next.collect()
	return next
}

// collect lists the matches in snapshot order.
func (e listEntry) collect() []*lifecycle.Service {
	n := 0
	for _, ok := range e.in {
		if ok {
			n++
		}
	}
	out := make([]*lifecycle.Service, 0, n)
	for i, ok := range e.in {
		if ok {
			out = append(out, e.snapshot[i])
		}
	}
	return out
}

// matcher evaluates a filter over one service at a time.
type matcher struct {
	filter fiql.Node
	cur    *lifecycle.Service
	get    func(string) (string, bool)
}

func newMatcher(filter fiql.Node) *matcher {
	m := &matcher{filter: filter}
	m.get = func(sel string) (string, bool) { return fieldOf(m.cur, sel) }
	return m
}

// lists reports whether a list shows s (not decommissioned and done) and
// the filter (nil: all) matches it.
func (m *matcher) lists(s *lifecycle.Service) bool {
	if s.LifecycleState == lifecycle.StateDecommissioned && s.ActiveOperation == "" {
		return false
	}
	m.cur = s
	return m.filter == nil || m.filter.Eval(m.get)
}
