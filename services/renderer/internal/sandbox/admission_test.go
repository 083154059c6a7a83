package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// enterAsync starts enter in the background; the channel gets its result.
func enterAsync(ctx context.Context, a *admission, principal string) chan error {
	done := make(chan error, 1)
	go func() { done <- a.enter(ctx, principal) }()
	return done
}

func waiting(a *admission) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queue)
}

func requireWaiting(t *testing.T, a *admission, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return waiting(a) == n }, 5*time.Second, time.Millisecond)
}

// One principal holds at most half the workers and half the queue; past
// that, and past a full queue, renders are refused at once; a freed worker
// goes to the oldest waiter below its share (issue 25 §5).
func TestAdmissionSharesWorkersAndQueue(t *testing.T) {
	ctx := context.Background()
	a := newAdmission(2, 4) // run share 1, queue share 2
	require.NoError(t, a.enter(ctx, "viewer"))
	v1 := enterAsync(ctx, a, "viewer")
	v2 := enterAsync(ctx, a, "viewer")
	requireWaiting(t, a, 2)
	err := a.enter(ctx, "viewer")
	require.ErrorIs(t, err, ErrBusy)
	require.EqualError(t, err, `renderer busy: "viewer" already has 2 renders queued, its share of the 4 places (--render-queue): retry later`)

	require.NoError(t, a.enter(ctx, "admin"), "the other half of the workers is free for another principal")
	o1 := enterAsync(ctx, a, "ops")
	o2 := enterAsync(ctx, a, "ops")
	requireWaiting(t, a, 4)
	err = a.enter(ctx, "audit")
	require.EqualError(t, err, "renderer busy: 4 renders are queued, the limit (--render-queue): retry later")

	// The admin's worker goes to ops (the viewer is at its share), oldest
	// first; the viewer's next render waits for the viewer's worker.
	a.leave("admin")
	first := <-anyOf(o1, o2)
	require.NoError(t, first)
	require.Equal(t, 3, waiting(a))
	a.leave("viewer")
	select {
	case err := <-v1:
		require.NoError(t, err, "the viewer's oldest waiter")
	case err := <-v2:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the viewer's worker was not handed on")
	}
	require.Equal(t, 2, waiting(a))
}

func anyOf(cs ...chan error) chan error {
	out := make(chan error, len(cs))
	for _, c := range cs {
		go func() { out <- <-c }()
	}
	return out
}

// A waiter that gives up leaves the queue; one handed a worker as it gave
// up hands it on.
func TestAdmissionWaiterGivesUp(t *testing.T) {
	a := newAdmission(1, 2)
	require.NoError(t, a.enter(context.Background(), "x"))
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := enterAsync(ctx, a, "y")
	requireWaiting(t, a, 1)
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	require.Equal(t, 0, waiting(a))
	next := enterAsync(context.Background(), a, "y")
	requireWaiting(t, a, 1)
	a.leave("x")
	require.NoError(t, <-next)
	a.leave("y")
	require.NoError(t, a.enter(context.Background(), "z"), "every slot was given back")
}
