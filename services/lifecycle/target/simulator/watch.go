package simulator

import (
	"context"
	"sync"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

var _ target.ChangeFeed = (*Simulator)(nil)

// watchers are the change feed's subscribers.
type watchers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(target.Change)
}

// Watch implements target.ChangeFeed: fn is called after every change the
// simulator commits (applies, transfers, deletions, releases, loads) and
// with an empty ServiceID when faults or facts change.
func (s *Simulator) Watch(ctx context.Context, fn func(target.Change)) {
	s.watch.mu.Lock()
	if s.watch.fns == nil {
		s.watch.fns = map[int]func(target.Change){}
	}
	id := s.watch.next
	s.watch.next++
	s.watch.fns[id] = fn
	s.watch.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.watch.mu.Lock()
		defer s.watch.mu.Unlock()
		delete(s.watch.fns, id)
	})
}

func (s *Simulator) notify(c target.Change) {
	s.watch.mu.Lock()
	defer s.watch.mu.Unlock()
	for _, fn := range s.watch.fns {
		fn(c)
	}
}
