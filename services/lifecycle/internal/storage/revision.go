package storage

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// revisioned is a store with one revision counter for all its keys
// (boltstore: its latest write; etcdstore: the highest revision this
// client has seen).
type revisioned interface{ Revision() int64 }

var _ lifecycle.Revisions = (*Repo)(nil)

// recheckEvery spaces the progress requests (and, on a store that is not
// followed, the re-reads) of a read waiting for a revision.
const recheckEvery = 50 * time.Millisecond

// viewRevision is how far the service cache has followed the store: every
// change up to rev is in it.
type viewRevision struct {
	mu    sync.Mutex
	rev   int64
	moved chan struct{} // closed and replaced when rev moves
	ask   chan struct{} // progress requests to the follow
}

func (v *viewRevision) init() {
	if v.moved == nil {
		v.moved, v.ask = make(chan struct{}), make(chan struct{}, 1)
	}
}

func (v *viewRevision) reached(rev int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.init()
	if rev > v.rev {
		v.rev = rev
		close(v.moved)
		v.moved = make(chan struct{})
	}
}

func (v *viewRevision) at() (int64, <-chan struct{}) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.init()
	return v.rev, v.moved
}

func (v *viewRevision) requests() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.init()
	return v.ask
}

// request asks the follow for a progress notification (at most one
// pending).
func (v *viewRevision) request() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.init()
	select {
	case v.ask <- struct{}{}:
	default:
	}
}

// Revision is the store revision this replica's answers reflect at least:
// its view of the store and its own writes. 0 when the store has no
// revision counter.
func (r *Repo) Revision() int64 {
	rs, ok := store.Unwrap(r.s).(revisioned)
	if !ok {
		return 0
	}
	at, _ := r.view.at()
	return max(rs.Revision(), at)
}

// viewAt is how far this replica's view has come: the followed revision
// when the store is followed (etcd), else the store's own (one process
// owns a bbolt file: its view is always current).
func (r *Repo) viewAt() (int64, <-chan struct{}) {
	if r.CanFollow() {
		return r.view.at()
	}
	rs, ok := store.Unwrap(r.s).(revisioned)
	if !ok {
		return 0, nil
	}
	return rs.Revision(), nil
}

// WaitRevision returns once this replica's view has reached rev, so a
// read made next is no older than what a client saw at rev on any
// replica. When ctx ends first it returns an error wrapping
// lifecycle.ErrUnavailable that says how far the view is.
func (r *Repo) WaitRevision(ctx context.Context, rev int64) error {
	tick := time.NewTicker(recheckEvery)
	defer tick.Stop()
	for {
		at, moved := r.viewAt()
		if at >= rev {
			return nil
		}
		r.view.request()
		select {
		case <-moved:
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("this replica's view of the store is at revision %d and did not reach the revision %d the request asks for in time: retry, or read through the replica that answered the write: %w",
				at, rev, lifecycle.ErrUnavailable)
		}
	}
}
