package sandbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrBusy: the render queue is full, or the caller already holds its
// share of it. The caller retries later (REST 429).
var ErrBusy = errors.New("renderer busy")

// Admission shares the workers among the principals renders are made for,
// so one caller cannot starve the others: eight renders of a template that
// loops until the time bound, sent by one viewer, made an administrator's
// render wait 40 s behind them. A principal may run renders on at most
// half the workers and hold at most half the queue's places; a render
// that finds the queue full, or its principal's share of it taken, is
// refused at once (ErrBusy) instead of waiting. A freed worker goes to the
// longest-waiting render whose principal is below its share.
type admission struct {
	mu         sync.Mutex
	free       int // workers no render holds
	runShare   int // most workers one principal may hold
	queueMax   int
	queueShare int // most queue places one principal may hold
	running    map[string]int
	waiting    map[string]int
	queue      []*ticket // oldest first
}

type ticket struct {
	principal string
	ready     chan struct{} // closed when the ticket was given a worker
}

// half is n/2, at least 1: with one worker (or one queue place) a
// principal may have it.
func half(n int) int { return max(1, n/2) }

func newAdmission(workers, queue int) *admission {
	return &admission{free: workers, runShare: half(workers), queueMax: queue, queueShare: half(queue),
		running: map[string]int{}, waiting: map[string]int{}}
}

// enter waits for a worker slot for principal, or refuses at once when it
// would have to queue beyond the bounds. It returns when ctx ends.
func (a *admission) enter(ctx context.Context, principal string) error {
	a.mu.Lock()
	if a.free > 0 && a.running[principal] < a.runShare {
		a.free--
		a.running[principal]++
		a.mu.Unlock()
		return nil
	}
	if len(a.queue) >= a.queueMax {
		a.mu.Unlock()
		return fmt.Errorf("%w: %d renders are queued, the limit (--render-queue): retry later", ErrBusy, a.queueMax)
	}
	if a.waiting[principal] >= a.queueShare {
		a.mu.Unlock()
		return fmt.Errorf("%w: %q already has %d renders queued, its share of the %d places (--render-queue): retry later",
			ErrBusy, principal, a.waiting[principal], a.queueMax)
	}
	t := &ticket{principal: principal, ready: make(chan struct{})}
	a.queue = append(a.queue, t)
	a.waiting[principal]++
	a.mu.Unlock()

	select {
	case <-t.ready:
		return nil
	case <-ctx.Done():
		a.mu.Lock()
		defer a.mu.Unlock()
		select {
		case <-t.ready:
			// Given a worker just as the caller gave up: pass it on.
			a.leaveLocked(principal)
		default:
			a.dropLocked(t)
		}
		return fmt.Errorf("waiting for a render worker: %w", ctx.Err())
	}
}

// leave gives principal's slot back and hands it to the next waiter.
func (a *admission) leave(principal string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.leaveLocked(principal)
}

func (a *admission) leaveLocked(principal string) {
	a.running[principal]--
	if a.running[principal] == 0 {
		delete(a.running, principal)
	}
	a.free++
	a.dispatchLocked()
}

// dispatchLocked gives free slots to the oldest waiters below their share.
func (a *admission) dispatchLocked() {
	for i := 0; i < len(a.queue) && a.free > 0; {
		t := a.queue[i]
		if a.running[t.principal] >= a.runShare {
			i++
			continue
		}
		a.removeLocked(i)
		a.free--
		a.running[t.principal]++
		close(t.ready)
	}
}

// dropLocked removes a waiter that gave up.
func (a *admission) dropLocked(t *ticket) {
	for i, q := range a.queue {
		if q == t {
			a.removeLocked(i)
			return
		}
	}
}

func (a *admission) removeLocked(i int) {
	t := a.queue[i]
	a.queue = append(a.queue[:i], a.queue[i+1:]...)
	a.waiting[t.principal]--
	if a.waiting[t.principal] == 0 {
		delete(a.waiting, t.principal)
	}
}

type principalKey struct{}

// WithPrincipal names who a render is made for (the REST caller a
// lifecycle request serves, or the calling service itself); renders of
// one principal share the workers fairly with everyone else's.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey{}, principal)
}

func principalOf(ctx context.Context) string {
	p, _ := ctx.Value(principalKey{}).(string)
	return p
}
