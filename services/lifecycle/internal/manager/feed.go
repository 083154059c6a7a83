package manager

import (
	"context"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"sync"
	"sync/atomic"
)

// Feed is a repository that reports every committed change of a service,
// whichever replica made it (etcd). With one, the watch streams and the
// service view of every replica follow the store instead of only this
// process's own commits.
type Feed interface {
	CanFollow() bool
	// Follow reports each change (svc nil: deleted) until ctx ends.
	Follow(ctx context.Context, changed func(id string, svc *lifecycle.Service)) error
}

// feeding is set while the watch streams are fed by the store; this
// process's own commits are then published by the feed too, once.
type feeding struct{ on atomic.Bool }

// followStore feeds the watch hub from the repository's feed, when it has
// one.
func (m *core) followStore(ctx context.Context, wg *sync.WaitGroup) {
	f, ok := m.Repo.(Feed)
	if !ok || !f.CanFollow() {
		return
	}
	m.feeding.on.Store(true)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer m.feeding.on.Store(false)
		err := f.Follow(ctx, func(id string, svc *lifecycle.Service) {
			if svc == nil {
				m.hub.publish(Event{ID: id, Deleted: true, Time: m.now()})
				return
			}
			m.hub.publish(eventOf(svc, false, m.now()))
			// Another replica's commit (an operation's end, applied
			// resources) is work for this replica's controllers when it
			// leads them, as its own commits are.
			m.queueReconcile(id)
		})
		if err != nil && ctx.Err() == nil {
			m.Log.Error("following the store stopped; watch streams see only this replica's changes", "error", err)
		}
	}()
}
