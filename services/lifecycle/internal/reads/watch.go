package reads

import (
	"context"
	"fmt"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"slices"
	"strings"
	"sync"
	"time"
)

// Event is one observed change of a service.
type Event struct {
	ID             string
	Status         string
	Phase          string
	LifecycleState string
	Version        string
	Revision       int64
	Time           time.Time
	Deleted        bool
	// Progress is the running (or last) operation's step, so clients can
	// follow progress on the stream instead of polling the state.
	Progress *lifecycle.Progress
}

// EventOf is the event of a service as written.
func EventOf(s *lifecycle.Service, deleted bool, now time.Time) Event {
	e := Event{ID: s.ID, Status: s.Status, Phase: s.Phase, LifecycleState: s.LifecycleState,
		Version: s.Version, Revision: s.Revision, Time: now, Deleted: deleted}
	if s.Progress != nil {
		p := *s.Progress
		e.Progress = &p
	}
	return e
}

// sameAs tells whether e shows nothing new compared with o.
func (e Event) sameAs(o Event) bool {
	if e.Status != o.Status || e.Phase != o.Phase || e.LifecycleState != o.LifecycleState || e.Version != o.Version {
		return false
	}
	if (e.Progress == nil) != (o.Progress == nil) {
		return false
	}
	return e.Progress == nil || *e.Progress == *o.Progress
}

// Hub fans service events out to watchers. A slow watcher loses
// intermediate events but always receives the latest one: its channel
// holds one pending event that newer ones replace.
type Hub struct {
	mu   sync.Mutex
	subs map[string]map[*sub]struct{}
}

type sub struct {
	ch chan Event
}

// NewHub returns a hub with no watchers.
func NewHub() *Hub { return &Hub{subs: map[string]map[*sub]struct{}{}} }

// Publish hands e to the service's watchers.
func (h *Hub) Publish(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs[e.ID] {
		select {
		case s.ch <- e:
		default:
			// Replace the pending event with the newer one.
			select {
			case <-s.ch:
			default:
			}
			s.ch <- e
		}
	}
}

func (h *Hub) subscribe(id string) *sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &sub{ch: make(chan Event, 1)}
	if h.subs[id] == nil {
		h.subs[id] = map[*sub]struct{}{}
	}
	h.subs[id][s] = struct{}{}
	return s
}

func (h *Hub) unsubscribe(id string, s *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs[id], s)
	if len(h.subs[id]) == 0 {
		delete(h.subs, id)
	}
}

// statuses are api.md's status values, the ones until may name.
var statuses = []string{lifecycle.StatusBusy, lifecycle.StatusUnresolved, lifecycle.StatusReady, lifecycle.StatusHealthy, lifecycle.StatusUnhealthy, lifecycle.StatusMaintenance, lifecycle.StatusUnavailable}

// ends reports whether e is the last event a watch until status sends:
// the service has that status, or its operation failed or got stuck.
func (e Event) ends(until string) bool {
	if until == "" {
		return false
	}
	if e.Status == until {
		return true
	}
	return e.Progress != nil && (e.Progress.Outcome == lifecycle.OutcomeFailed || e.Progress.Outcome == lifecycle.OutcomeStuck)
}

// Watch streams a service's status, phase and lifecycle state changes,
// starting with its current state, until ctx ends or the service is
// deleted (the last event then has Deleted set), or, with until, after
// the event where the service has that status or its operation failed.
// Consecutive events with the same status, phase, state, version and
// progress are collapsed.
func (r *Reader) Watch(ctx context.Context, id, until string, send func(Event) error) error {
	if until != "" {
		i := slices.IndexFunc(statuses, func(s string) bool { return strings.EqualFold(s, until) })
		if i < 0 {
			return fmt.Errorf("until: %q is not a status: want one of %s: %w", until, strings.Join(statuses, ", "), lifecycle.ErrInvalidArgument)
		}
		until = statuses[i]
	}
	s := r.d.Hub.subscribe(id)
	defer r.d.Hub.unsubscribe(id, s)
	svc, err := r.Get(ctx, id)
	if err != nil {
		return err
	}
	last := EventOf(svc, false, r.d.Now())
	if err := send(last); err != nil || last.ends(until) {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e := <-s.ch:
			if e.Deleted {
				return send(e)
			}
			if e.sameAs(last) {
				continue
			}
			last = e
			if err := send(e); err != nil || e.ends(until) {
				return err
			}
		}
	}
}
