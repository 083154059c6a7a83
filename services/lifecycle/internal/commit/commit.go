// Package commit is the lifecycle service's one write path. Every change to
// a service, its resources, its operations, the catalog or the inventory is
// a transaction through Writer, and every service a transaction wrote (or
// deleted) reaches the Listener — the watch streams and the controllers —
// exactly once: from the store's feed when replicas share one store (so
// another replica's commits arrive too), else straight after the commit.
//
// The journal writes of the operation engine (a step running, succeeded,
// the operation closed) go through the same Writer (journal.go), and so
// does the revision check of a conditional write (CheckRevision).
package commit

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Listener hears of every committed change of a service.
type Listener interface {
	// ServiceChanged: svc (the listener's own copy) was written.
	ServiceChanged(svc *lifecycle.Service)
	// ServiceDeleted: the service's record was removed.
	ServiceDeleted(id string)
}

// Feed is a repository that reports every committed change of a service,
// whichever replica made it (etcd). It is declared here, where it is used;
// internal/storage implements it.
type Feed interface {
	CanFollow() bool
	// Follow reports each change (svc nil: deleted) until ctx ends.
	Follow(ctx context.Context, changed func(id string, svc *lifecycle.Service)) error
}

// Deps are what the write path needs.
type Deps struct {
	Repo     lifecycle.Repository
	Listener Listener
	Now      func() time.Time
	Log      *slog.Logger
}

// Writer commits changes and announces them.
type Writer struct {
	d Deps
	// feeding is set while the store's feed announces every commit, this
	// process's own too: Update then leaves announcing to the feed.
	feeding atomic.Bool
}

// New returns the write path over d.Repo.
func New(d Deps) *Writer { return &Writer{d: d} }

// Update runs fn in a transaction and announces every service it wrote
// once committed.
func (w *Writer) Update(ctx context.Context, fn func(lifecycle.Tx) error) error {
	var rec *recordingTx
	err := w.d.Repo.Update(ctx, func(tx lifecycle.Tx) error {
		rec = &recordingTx{Tx: tx}
		return fn(rec)
	})
	if err != nil {
		return err
	}
	if w.feeding.Load() {
		return nil // the store's feed announces every commit, this one too
	}
	for _, s := range rec.put {
		w.d.Listener.ServiceChanged(s)
	}
	for _, id := range rec.deleted {
		w.d.Listener.ServiceDeleted(id)
	}
	return nil
}

// recordingTx remembers what a transaction wrote, to announce it.
type recordingTx struct {
	lifecycle.Tx
	put     []*lifecycle.Service
	deleted []string
}

func (r *recordingTx) PutService(s *lifecycle.Service) error {
	if err := r.Tx.PutService(s); err != nil {
		return err
	}
	r.put = append(r.put, s.Clone())
	return nil
}

func (r *recordingTx) DeleteService(id string) error {
	if err := r.Tx.DeleteService(id); err != nil {
		return err
	}
	r.deleted = append(r.deleted, id)
	return nil
}

// Mutate applies fn to a fresh copy of the service and writes it back,
// with the operations fn recorded in its PendingHistory, retrying when a
// concurrent writer won (fn must be repeatable).
func (w *Writer) Mutate(ctx context.Context, id string, fn func(tx lifecycle.Tx, svc *lifecycle.Service) error) (*lifecycle.Service, error) {
	var out *lifecycle.Service
	err := w.Update(ctx, func(tx lifecycle.Tx) error {
		svc, err := tx.Service(id)
		if err != nil {
			return err
		}
		if err := fn(tx, svc); err != nil {
			return err
		}
		for _, op := range svc.PendingHistory {
			if err := tx.PutOperation(op); err != nil {
				return err
			}
		}
		svc.PendingHistory = nil
		svc.UpdatedAt = w.d.Now()
		if err := tx.PutService(svc); err != nil {
			return err
		}
		out = svc
		return nil
	})
	return out, err
}

// Follow announces the store's feed, when the repository has one, until
// ctx ends; wg tracks the goroutine. From then on Update leaves announcing
// to the feed.
func (w *Writer) Follow(ctx context.Context, wg *sync.WaitGroup) {
	f, ok := w.d.Repo.(Feed)
	if !ok || !f.CanFollow() {
		return
	}
	w.feeding.Store(true)
	wg.Go(func() {
		defer w.feeding.Store(false)
		err := f.Follow(ctx, func(id string, svc *lifecycle.Service) {
			if svc == nil {
				w.d.Listener.ServiceDeleted(id)
				return
			}
			w.d.Listener.ServiceChanged(svc)
		})
		if err != nil && ctx.Err() == nil {
			w.d.Log.Error("following the store stopped; watch streams see only this replica's changes", "error", err)
		}
	})
}
