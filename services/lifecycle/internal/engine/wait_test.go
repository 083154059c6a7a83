package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// waitingHost journals waits.
type waitingHost struct {
	*host
	waits chan string
}

func (h waitingHost) StepWaiting(_ context.Context, j *job, i int, w *WaitError) {
	h.waits <- j.names[i] + ": " + w.Reason
}

// A step that asks to wait is neither done nor failed: it runs again after
// its wait, without a worker held meanwhile (the only worker runs another
// operation in between), and the operation then goes on to its next step.
// A step may add steps to its operation (Steps is read on every turn).
func TestWaitingStepsRunAgainLaterWithoutHoldingAWorker(t *testing.T) {
	release := make(chan struct{})
	inner := newHost(func(_ context.Context, step string, call int) error {
		switch step {
		case "gate":
			select {
			case <-release:
				return nil
			default:
				return Wait(5*time.Millisecond, "approval %d", call)
			}
		case "other":
			close(release)
		}
		return nil
	})
	h := waitingHost{host: inner, waits: make(chan string, 1024)}
	waiting := Key{Service: "s1", Operation: "op1"}
	other := Key{Service: "s2", Operation: "op2"}
	inner.jobs[waiting] = &job{kind: "rollout", names: []string{"gate", "after"}, done: make([]bool, 2)}

	e := New[*job](Config{Workers: 1, SweepEvery: time.Hour, RetryBackoff: time.Millisecond,
		StepTimeout: func(string) time.Duration { return time.Hour }, Retryable: func(error) bool { return false }}, Host[*job](h))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	require.NoError(t, e.Start(ctx, &wg))
	t.Cleanup(func() { cancel(); wg.Wait() })
	// The other operation arrives once the gate waits (had it run first,
	// the gate would never wait: before, the map's order decided, and the
	// test hung now and then).
	select {
	case w := <-h.waits:
		require.Equal(t, "gate: approval 1", w, "the host journals the wait with its reason")
	case <-time.After(10 * time.Second):
		t.Fatal("the gate never waited")
	}
	inner.mu.Lock()
	inner.jobs[other] = &job{kind: "upgrade", names: []string{"other"}, done: make([]bool, 1)}
	inner.mu.Unlock()
	e.Enqueue(other)

	require.Eventually(t, func() bool {
		_, failed, ok, _ := inner.snapshot()
		return ok[waiting] && ok[other] && len(failed) == 0
	}, 10*time.Second, 5*time.Millisecond)
	log, _, _, _ := inner.snapshot()
	require.Contains(t, log, "succeeded other", "the only worker ran the other operation while the gate waited")
	require.Contains(t, log, "succeeded after")
}
