package boltstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/vcfsm/vcfsm/platform/store"
)

// batchCall is one Batch call waiting for its transaction.
type batchCall struct {
	fn func(store.Tx) error
	// done receives errLead (this call now leads), then its result.
	done chan error
}

var (
	// errLead hands the lead to a waiting call.
	errLead = errors.New("lead the next batch")
	// errSolo: the call's fn failed inside a batch; it runs again alone so
	// that its error is its own.
	errSolo = errors.New("run alone")
)

// Batch runs fn in a write transaction like Update, possibly in one
// transaction with the fns of concurrent Batch calls: one commit for many
// small writes from parallel callers (a simulated target applying
// thousands of objects from many goroutines). Calls arriving while a
// batch commits join the next one, so a lone call waits for no timer
// (bbolt's own db.Batch waits up to MaxBatchDelay for company). A fn that
// fails is run again alone and its error goes to its caller only; the
// others are retried without it. fn may therefore run more than once, as
// store.Store.Update allows. Once queued, a call waits for its batch even
// if ctx ends.
func (s *Store) Batch(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c := &batchCall{fn: fn, done: make(chan error, 1)}
	s.batchMu.Lock()
	s.pending = append(s.pending, c)
	follow := s.leading
	s.leading = true
	s.batchMu.Unlock()
	if follow {
		if err := <-c.done; !errors.Is(err, errLead) {
			return s.batchResult(ctx, c, err)
		}
	}
	s.lead(ctx)
	return s.batchResult(ctx, c, <-c.done)
}

// batchResult runs a call that failed in a batch alone.
func (s *Store) batchResult(ctx context.Context, c *batchCall, err error) error {
	if errors.Is(err, errSolo) {
		return s.Update(ctx, c.fn)
	}
	return err
}

// lead commits every queued call (the leader's own among them), then
// hands the lead to the first call queued meanwhile, if any.
func (s *Store) lead(ctx context.Context) {
	s.batchMu.Lock()
	calls := s.pending
	s.pending = nil
	s.batchMu.Unlock()
	s.commitBatch(context.WithoutCancel(ctx), calls)
	s.batchMu.Lock()
	defer s.batchMu.Unlock()
	if len(s.pending) == 0 {
		s.leading = false
		return
	}
	s.pending[0].done <- errLead
}

// commitBatch runs calls in one transaction and tells each its result;
// a failing fn is dropped from the batch (errSolo) and the rest retried.
func (s *Store) commitBatch(ctx context.Context, calls []*batchCall) {
	for len(calls) > 0 {
		failed := -1
		err := s.Update(ctx, func(t store.Tx) error {
			for i, c := range calls {
				if err := callSafely(c.fn, t); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			calls[failed].done <- errSolo
			calls = slices.Delete(calls, failed, failed+1)
			continue
		}
		for _, c := range calls {
			c.done <- err
		}
		return
	}
}

// callSafely turns a panic in fn into an error: the leader's goroutine
// must not die of another caller's fn (it panics again in its own caller's
// goroutine when run alone).
func callSafely(fn func(store.Tx) error, t store.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic in a batched transaction: %v", p)
		}
	}()
	return fn(t)
}
