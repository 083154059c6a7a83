package storage

import (
	"slices"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// servicesSlice is the services as the slice Services hands out. A write
// does not throw it away: it marks the ids it wrote, and the next read
// patches a copy of the slice in their places. So a read after a change
// costs a copy of the pointers, not a walk of the map, and every service
// that did not change keeps its position: a reader that kept the previous
// slice (the list memo) finds what changed by comparing the two, position
// by position, and re-examines only those.
//
// It is guarded by the Repo's mutex.
type servicesSlice struct {
	slice []*lifecycle.Service
	pos   map[string]int      // id → its index in slice
	dirty map[string]struct{} // ids written since slice was made
}

// fresh reports whether slice is current (nothing written since).
func (s *servicesSlice) fresh() bool { return s.slice != nil && len(s.dirty) == 0 }

// forget drops the slice: the next read builds it from the map (a reload
// replaced every service).
func (s *servicesSlice) forget() { s.slice, s.pos, s.dirty = nil, nil, nil }

// touch records that id was written (or deleted).
func (s *servicesSlice) touch(id string) {
	if s.slice == nil {
		return // built from the map at the next read anyway
	}
	if s.dirty == nil {
		s.dirty = map[string]struct{}{}
	}
	s.dirty[id] = struct{}{}
}

// current returns the slice for services, patching a copy of the last one
// with the ids written since. A slice once handed out is never changed.
func (s *servicesSlice) current(services map[string]*lifecycle.Service) []*lifecycle.Service {
	switch {
	case s.fresh():
		return s.slice
	case s.slice == nil:
		s.slice = make([]*lifecycle.Service, 0, len(services))
		s.pos = make(map[string]int, len(services))
		for id, svc := range services {
			s.pos[id] = len(s.slice)
			s.slice = append(s.slice, svc)
		}
		return s.slice
	}
	next := slices.Clone(s.slice)
	for id := range s.dirty {
		svc, ok := services[id]
		p, had := s.pos[id]
		switch {
		case ok && had:
			next[p] = svc
		case ok:
			s.pos[id] = len(next)
			next = append(next, svc)
		case had:
			// The last service takes the deleted one's place.
			last := next[len(next)-1]
			next[p], s.pos[last.ID] = last, p
			next = next[:len(next)-1]
			delete(s.pos, id)
		}
	}
	s.slice, s.dirty = next, nil
	return s.slice
}
