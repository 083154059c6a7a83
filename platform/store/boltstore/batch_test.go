package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/boltstore"
)

func openBatchStore(t *testing.T) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "batch.db"), store.Schema{Version: 1, Buckets: []string{"b"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Calls queued while a batch commits share the next transaction; each
// one's write is kept, and a failing fn fails only its own call.
func TestBatchSharesTransactionsAndIsolatesFailures(t *testing.T) {
	s := openBatchStore(t)
	ctx := context.Background()
	var mu sync.Mutex
	txs := map[store.Tx]int{} // transaction → fns run in it
	seen := func(tx store.Tx) {
		mu.Lock()
		defer mu.Unlock()
		txs[tx]++
	}
	// The first call leads and holds its batch open until the others are
	// queued behind it.
	release := make(chan struct{})
	inFirst := make(chan struct{})
	var wg sync.WaitGroup
	var firstErr error
	wg.Go(func() {
		firstErr = s.Batch(ctx, func(tx store.Tx) error {
			seen(tx)
			close(inFirst)
			<-release
			_, err := tx.Put("b", "first", []byte("1"), store.AnyRevision)
			return err
		})
	})
	<-inFirst
	boom := errors.New("boom")
	errs := make([]error, 10)
	var queued sync.WaitGroup
	for i := range errs {
		queued.Add(1)
		wg.Go(func() {
			queued.Done()
			errs[i] = s.Batch(ctx, func(tx store.Tx) error {
				seen(tx)
				if i == 3 {
					return boom
				}
				_, err := tx.Put("b", fmt.Sprintf("k%d", i), []byte("v"), store.AnyRevision)
				return err
			})
		})
	}
	queued.Wait()
	// Let the ten calls reach the queue before the first batch commits.
	require.Eventually(t, func() bool { return s.QueuedBatchCalls() == len(errs) }, 5*time.Second, time.Millisecond, "calls never queued")
	close(release)
	wg.Wait()
	require.NoError(t, firstErr)
	for i, err := range errs {
		if i == 3 {
			require.ErrorIs(t, err, boom)
			continue
		}
		require.NoError(t, err)
		_, err := s.Get(ctx, "b", fmt.Sprintf("k%d", i))
		require.NoError(t, err, "k%d was committed", i)
	}
	_, err := s.Get(ctx, "b", "k3")
	require.ErrorIs(t, err, store.ErrNotFound)
	// The first batch; the ten together, up to k3 (failing); the nine
	// again without it, committed together; k3 alone.
	counts := []int{}
	for _, n := range txs {
		counts = append(counts, n)
	}
	require.Len(t, counts, 4, "%v", counts)
	require.Contains(t, counts, 9, "the nine others committed in one transaction")
}

// A lone call commits at once (no timer), and a panicking fn panics in
// its own caller only.
func TestBatchAloneAndPanics(t *testing.T) {
	s := openBatchStore(t)
	ctx := context.Background()
	require.NoError(t, s.Batch(ctx, func(tx store.Tx) error {
		_, err := tx.Put("b", "k", []byte("v"), store.AnyRevision)
		return err
	}))
	rec, err := s.Get(ctx, "b", "k")
	require.NoError(t, err)
	require.Equal(t, "v", string(rec.Value))
	require.Panics(t, func() {
		_ = s.Batch(ctx, func(store.Tx) error { panic("bad fn") })
	})
	require.NoError(t, s.Batch(ctx, func(tx store.Tx) error {
		_, err := tx.Put("b", "after", []byte("v"), store.AnyRevision)
		return err
	}), "the store still batches after a panic")
}
