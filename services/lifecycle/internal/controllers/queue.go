package controllers

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// Queue is the controllers' work queue, keyed by service id: client-go's
// rate-limited work queue (a key is queued once however often it is added,
// never handed to two workers at once, retried with per-key exponential
// backoff). Commits, operation ends and the targets' change feed add to it
// from anywhere (Kick); the controller loop makes a fresh queue for each
// term it leads and drops it when the term ends, so a replica that loses
// and wins back the leadership starts again with a working queue (adds
// while no term runs are dropped: every term starts by queueing what needs
// a pass).
type Queue struct {
	interval time.Duration

	mu sync.Mutex
	q  workqueue.TypedRateLimitingInterface[string]
	// reconciling are the services a controller pass is working on.
	reconciling map[string]bool
}

// NewQueue returns a queue whose failing keys wait interval, doubling up
// to healthyRecheck intervals, before their next try.
func NewQueue(interval time.Duration) *Queue {
	return &Queue{interval: interval, reconciling: map[string]bool{}}
}

// open starts a term's queue; the returned function shuts it down.
func (q *Queue) open() (workqueue.TypedRateLimitingInterface[string], func()) {
	wq := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](q.interval, healthyRecheck*q.interval))
	q.mu.Lock()
	q.q = wq
	q.mu.Unlock()
	return wq, func() {
		q.mu.Lock()
		if q.q == wq {
			q.q = nil
		}
		q.mu.Unlock()
		wq.ShutDown()
	}
}

// current is the running term's queue, nil between terms.
func (q *Queue) current() workqueue.TypedRateLimitingInterface[string] {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.q
}

// Add queues a service for a pass now.
func (q *Queue) Add(id string) {
	if wq := q.current(); wq != nil {
		wq.Add(id)
	}
}

// Kick queues a service after a change. A service its own controller pass
// is working on is looked at again one period later instead: the pass's
// own applies and writes come back through the feeds, and reacting to them
// at once would loop.
func (q *Queue) Kick(id string) {
	wq := q.current()
	if wq == nil {
		return
	}
	q.mu.Lock()
	busy := q.reconciling[id]
	q.mu.Unlock()
	if busy {
		wq.AddAfter(id, q.interval)
		return
	}
	wq.Add(id)
}

// working marks a service as being reconciled (or no longer).
func (q *Queue) working(id string, on bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if on {
		q.reconciling[id] = true
	} else {
		delete(q.reconciling, id)
	}
}
