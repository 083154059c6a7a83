package workqueue

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDeduplicates(t *testing.T) {
	q := New[string](time.Millisecond, time.Second)
	q.Add("a")
	q.Add("b")
	q.Add("a")
	require.Equal(t, 2, q.Len())
	k, ok := q.Get()
	require.True(t, ok)
	require.Equal(t, "a", k)
	// Added while processing: not handed out twice, queued again on Done.
	q.Add("a")
	require.Equal(t, 1, q.Len())
	q.Done("a")
	require.Equal(t, 2, q.Len())
	k, _ = q.Get()
	require.Equal(t, "b", k)
	k, _ = q.Get()
	require.Equal(t, "a", k)
}

func TestOneWorkerPerKey(t *testing.T) {
	q := New[int](time.Millisecond, time.Second)
	var mu sync.Mutex
	busy := map[int]bool{}
	readds, processed := 0, 0
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				k, ok := q.Get()
				if !ok {
					return
				}
				mu.Lock()
				if busy[k] {
					t.Errorf("key %d processed by two workers at once", k)
				}
				busy[k] = true
				readd := readds < 500
				readds++
				mu.Unlock()
				if readd {
					q.Add(k) // added while processing: queued again on Done
				}
				runtime.Gosched()
				mu.Lock()
				busy[k] = false
				processed++
				mu.Unlock()
				q.Done(k)
			}
		})
	}
	for i := range 1000 {
		q.Add(i % 10)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := readds
		mu.Unlock()
		if (n >= 500 && q.Len() == 0) || time.Now().After(deadline) {
			break
		}
		runtime.Gosched()
	}
	q.ShutDown()
	wg.Wait()
	require.GreaterOrEqual(t, readds, 500)
}

func TestAddAfterKeepsEarliest(t *testing.T) {
	q := New[string](time.Millisecond, time.Second)
	defer q.ShutDown()
	q.AddAfter("a", time.Hour)
	q.AddAfter("a", 20*time.Millisecond)
	q.AddAfter("a", time.Hour)
	require.Equal(t, 0, q.Len())
	got := make(chan string)
	go func() {
		k, _ := q.Get()
		got <- k
	}()
	select {
	case k := <-got:
		require.Equal(t, "a", k)
	case <-time.After(5 * time.Second):
		t.Fatal("the delayed add never came")
	}
}

func TestBackoffDoublesUntilForget(t *testing.T) {
	q := New[string](50*time.Millisecond, 200*time.Millisecond)
	defer q.ShutDown()
	for range 5 {
		q.AddRateLimited("a")
	}
	require.Equal(t, 5, q.Failures("a"))
	q.Forget("a")
	require.Equal(t, 0, q.Failures("a"))
	start := time.Now()
	q.AddRateLimited("a")
	k, ok := q.Get()
	require.True(t, ok)
	require.Equal(t, "a", k)
	// Timers may fire a hair early against the monotonic clock; an
	// immediate retry (no wait) would take microseconds, not 40 ms.
	require.GreaterOrEqual(t, time.Since(start), 40*time.Millisecond, "the first retry waits the base delay (50ms)")
}

func TestShutDownReleasesGet(t *testing.T) {
	q := New[string](time.Millisecond, time.Second)
	done := make(chan bool)
	go func() {
		_, ok := q.Get()
		done <- ok
	}()
	q.ShutDown()
	select {
	case ok := <-done:
		require.False(t, ok)
	case <-time.After(5 * time.Second):
		t.Fatal("Get was not released")
	}
	q.Add("a")
	require.Equal(t, 0, q.Len(), "nothing is queued after shut down")
}
