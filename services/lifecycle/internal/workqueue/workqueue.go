// Package workqueue is a rate-limited work queue keyed by comparable
// keys, after client-go's util/workqueue design: a key added while it is
// queued is queued once (deduplication); a key added while a worker
// processes it is queued again when the worker is done, never processed
// by two workers at once; keys can be added after a delay, and a failing
// key is retried with per-key exponential backoff until it is forgotten.
package workqueue

import (
	"sync"
	"time"
)

// Queue holds keys to process. The zero value is not usable: use New.
type Queue[K comparable] struct {
	base, max time.Duration

	mu         sync.Mutex
	cond       *sync.Cond
	queue      []K
	dirty      map[K]struct{}
	processing map[K]struct{}
	// waiting: the earliest pending delayed add of a key and its timer.
	waiting  map[K]*delayed
	failures map[K]int
	shutdown bool
}

type delayed struct {
	at    time.Time
	timer *time.Timer
}

// New returns a queue whose failing keys wait base, 2×base, 4×base… up to
// max before their next try.
func New[K comparable](base, max time.Duration) *Queue[K] {
	q := &Queue[K]{
		base: base, max: max,
		dirty:      map[K]struct{}{},
		processing: map[K]struct{}{},
		waiting:    map[K]*delayed{},
		failures:   map[K]int{},
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// Add queues key unless it is already queued.
func (q *Queue[K]) Add(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addLocked(key)
}

func (q *Queue[K]) addLocked(key K) {
	if q.shutdown {
		return
	}
	if _, ok := q.dirty[key]; ok {
		return
	}
	q.dirty[key] = struct{}{}
	if _, ok := q.processing[key]; ok {
		return // Done queues it again
	}
	q.queue = append(q.queue, key)
	q.cond.Signal()
}

// AddAfter queues key once d has passed. Of several delayed adds of one
// key only the earliest is kept.
func (q *Queue[K]) AddAfter(key K, d time.Duration) {
	if d <= 0 {
		q.Add(key)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	at := time.Now().Add(d)
	if w, ok := q.waiting[key]; ok {
		if !w.at.After(at) {
			return
		}
		w.timer.Stop()
	}
	w := &delayed{at: at}
	w.timer = time.AfterFunc(d, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.waiting[key] == w {
			delete(q.waiting, key)
			q.addLocked(key)
		}
	})
	q.waiting[key] = w
}

// AddRateLimited queues key after its backoff, which doubles with every
// call until Forget.
func (q *Queue[K]) AddRateLimited(key K) {
	q.mu.Lock()
	n := q.failures[key]
	q.failures[key] = n + 1
	q.mu.Unlock()
	d := q.base
	for i := 0; i < n && d < q.max; i++ {
		d *= 2
	}
	q.AddAfter(key, min(d, q.max))
}

// Forget resets key's backoff (it succeeded).
func (q *Queue[K]) Forget(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.failures, key)
}

// Failures is how many times key was added rate-limited since Forget.
func (q *Queue[K]) Failures(key K) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.failures[key]
}

// Get blocks until a key is ready and hands it to the caller, who must
// call Done with it. ok is false once the queue is shut down.
func (q *Queue[K]) Get() (key K, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.queue) == 0 && !q.shutdown {
		q.cond.Wait()
	}
	if q.shutdown {
		return key, false
	}
	key = q.queue[0]
	var zero K
	q.queue[0] = zero
	q.queue = q.queue[1:]
	delete(q.dirty, key)
	q.processing[key] = struct{}{}
	return key, true
}

// Done marks key processed; if it was added meanwhile it is queued again.
func (q *Queue[K]) Done(key K) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.processing, key)
	if _, ok := q.dirty[key]; ok && !q.shutdown {
		q.queue = append(q.queue, key)
		q.cond.Signal()
	}
}

// Len is the number of keys ready to process.
func (q *Queue[K]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queue)
}

// ShutDown stops the delayed adds and releases every Get.
func (q *Queue[K]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.shutdown = true
	for k, w := range q.waiting {
		w.timer.Stop()
		delete(q.waiting, k)
	}
	q.cond.Broadcast()
}
