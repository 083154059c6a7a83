package etcdstore_test

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
)

// A replica following a bucket sees what another replica writes and
// deletes, with the revisions the writer got.
func TestFollowSeesOtherReplicas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := newPrefix()
	reader, writer := openAt(t, prefix, schema), openAt(t, prefix, schema)
	_, err := store.Put(ctx, writer, "services", "before", []byte("0"), store.MustNotExist)
	require.NoError(t, err)

	var mu sync.Mutex
	view := map[string]store.Record{}
	resets := 0
	done := make(chan error, 1)
	go func() {
		done <- reader.Follow(ctx, "services", func(recs []store.Record) {
			mu.Lock()
			defer mu.Unlock()
			resets++
			view = map[string]store.Record{}
			for _, r := range recs {
				view[r.Key] = r
			}
		}, func(c etcdstore.Change) {
			mu.Lock()
			defer mu.Unlock()
			if c.Deleted {
				delete(view, c.Key)
			} else {
				view[c.Key] = c.Record
			}
		})
	}()
	seen := func(key string) (store.Record, bool) {
		mu.Lock()
		defer mu.Unlock()
		r, ok := view[key]
		return r, ok
	}
	require.Eventually(t, func() bool { _, ok := seen("before"); return ok }, 10*time.Second, 5*time.Millisecond, "the reset holds what was there")

	rev, err := store.Put(ctx, writer, "services", "a", []byte("1"), store.MustNotExist)
	require.NoError(t, err)
	require.Eventually(t, func() bool { r, ok := seen("a"); return ok && r.Revision == rev && string(r.Value) == "1" },
		10*time.Second, 5*time.Millisecond, "a write by the other replica")
	require.NoError(t, store.Delete(ctx, writer, "services", "before", store.AnyRevision))
	require.Eventually(t, func() bool { _, ok := seen("before"); return !ok }, 10*time.Second, 5*time.Millisecond, "a delete by the other replica")
	mu.Lock()
	require.Equal(t, 1, resets, "one reset, then changes")
	mu.Unlock()

	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

// A follower reports how far its view has come: past another replica's
// write to the bucket once that write was delivered, and, asked for
// progress, past a write to another bucket (the followed one is quiet) —
// up to the revision the writer reports.
func TestFollowProgressReachesTheWritersRevision(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prefix := newPrefix()
	reader, writer := openAt(t, prefix, schema), openAt(t, prefix, schema)

	var mu sync.Mutex
	view := map[string]string{}
	var reached int64
	wentBack := false
	viewAt := func() (int64, map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		return reached, maps.Clone(view)
	}
	request := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- reader.FollowProgress(ctx, "services", func([]store.Record) {}, func(c etcdstore.Change) {
			mu.Lock()
			defer mu.Unlock()
			view[c.Key] = string(c.Record.Value)
		}, etcdstore.Progress{Reached: func(rev int64) {
			mu.Lock()
			defer mu.Unlock()
			wentBack = wentBack || rev < reached
			reached = rev
		}, Request: request})
	}()
	require.Eventually(t, func() bool { r, _ := viewAt(); return r > 0 }, 10*time.Second, 5*time.Millisecond, "the listing's revision")

	_, err := store.Put(ctx, writer, "services", "a", []byte("1"), store.MustNotExist)
	require.NoError(t, err)
	target := writer.Revision()
	require.Eventually(t, func() bool { r, _ := viewAt(); return r >= target }, 10*time.Second, 5*time.Millisecond)
	_, v := viewAt()
	require.Equal(t, "1", v["a"], "a view past the writer's revision holds its write")

	_, err = store.Put(ctx, writer, "resources", "elsewhere", []byte("x"), store.MustNotExist)
	require.NoError(t, err)
	target = writer.Revision()
	r, _ := viewAt()
	require.Less(t, r, target, "the followed bucket saw nothing of the other bucket's write")
	require.Eventually(t, func() bool {
		select {
		case request <- struct{}{}:
		default:
		}
		r, _ := viewAt()
		return r >= target
	}, 10*time.Second, 5*time.Millisecond, "a progress request brings the view to the cluster's revision")

	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	require.False(t, wentBack, "progress never goes back")
}
