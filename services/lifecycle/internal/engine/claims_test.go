package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// memClaims is a claim table shared by replicas in memory: what the etcd
// leases do between processes.
type memClaims struct {
	mu     sync.Mutex
	owners map[string]string
	lose   map[string]context.CancelFunc
	// refused counts claims refused because another replica held them.
	refused int
}

type replicaClaims struct {
	table   *memClaims
	replica string
}

func (r replicaClaims) Claim(ctx context.Context, service string) (context.Context, func(), error) {
	t := r.table
	t.mu.Lock()
	defer t.mu.Unlock()
	if o, ok := t.owners[service]; ok && o != r.replica {
		t.refused++
		return nil, nil, fmt.Errorf("%s holds %s: %w", o, service, ErrClaimed)
	}
	claimed, cancel := context.WithCancel(ctx)
	t.owners[service] = r.replica
	t.lose[service] = cancel
	return claimed, func() {
		cancel()
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.owners[service] == r.replica {
			delete(t.owners, service)
		}
	}, nil
}

// expire ends the owner's claim on service behind its back (its lease ran
// out) and frees the service.
func (t *memClaims) expire(service string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lose[service]()
	delete(t.owners, service)
}

func (t *memClaims) refusals() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refused
}

func (t *memClaims) owner(service string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.owners[service]
}

// With claims, only the owner runs a service's operation; when its claim
// is lost mid-step, it records nothing and another replica's sweep takes
// the operation over at that step.
func TestClaimsOwnershipAndTakeover(t *testing.T) {
	first := make(chan struct{})
	h := newHost(func(ctx context.Context, step string, call int) error {
		if step == "b" && call == 1 {
			close(first)
			<-ctx.Done() // the owner works until its claim is lost
			return ctx.Err()
		}
		return nil
	})
	k := Key{Service: "s1", Operation: "op1"}
	h.jobs[k] = &job{kind: "upgrade", names: []string{"a", "b", "c"}, done: make([]bool, 3)}
	table := &memClaims{owners: map[string]string{}, lose: map[string]context.CancelFunc{}}

	start(t, h, Config{Claims: replicaClaims{table, "r1"}, ClaimSweep: 10 * time.Millisecond})
	<-first
	start(t, h, Config{Claims: replicaClaims{table, "r2"}, ClaimSweep: 10 * time.Millisecond})
	require.Eventually(t, func() bool { return table.refusals() >= 3 }, 10*time.Second, 5*time.Millisecond,
		"r2 resumes the unfinished operation at start and sweeps for it again")
	require.Equal(t, "r1", table.owner("s1"))

	table.expire("s1")
	require.Eventually(t, func() bool {
		_, _, ok, _ := h.snapshot()
		return ok[k]
	}, 10*time.Second, 5*time.Millisecond, "r2 took the operation over")
	log, failed, _, _ := h.snapshot()
	require.Empty(t, failed, "the replica that lost its claim recorded no failure")
	require.Equal(t, []string{"running a", "succeeded a", "running b", "running b", "succeeded b", "running c", "succeeded c"}, log,
		"resumed at the journaled step: a ran once, b again")
}

// activeHost lists its running operations cheaply (ActiveLister) and
// offers nothing through Unfinished: a takeover can only come from Active.
type activeHost struct {
	*host
	active []Key
}

func (a activeHost) Unfinished(context.Context) ([]Key, error)     { return nil, nil }
func (a activeHost) Active(context.Context) ([]Key, error)         { return a.active, nil }
func (a activeHost) Load(ctx context.Context, k Key) (*job, error) { return a.host.Load(ctx, k) }

// The frequent takeover sweep uses the host's cheap list of running
// operations when it has one.
func TestTakeoverUsesActiveList(t *testing.T) {
	h := newHost(func(context.Context, string, int) error { return nil })
	k := Key{Service: "s1", Operation: "op1"}
	h.jobs[k] = &job{kind: "delete", names: []string{"a"}, done: make([]bool, 1)}
	table := &memClaims{owners: map[string]string{}, lose: map[string]context.CancelFunc{}}
	e := New[*job](Config{Claims: replicaClaims{table, "r2"}, ClaimSweep: 10 * time.Millisecond,
		StepTimeout: func(string) time.Duration { return 10 * time.Second }, Workers: 1, SweepEvery: time.Hour}, activeHost{h, []Key{k}})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	require.NoError(t, e.Start(ctx, &wg))
	t.Cleanup(func() { cancel(); wg.Wait() })
	require.Eventually(t, func() bool {
		_, _, ok, _ := h.snapshot()
		return ok[k]
	}, 10*time.Second, 5*time.Millisecond, "the operation listed by Active was taken over")
}
