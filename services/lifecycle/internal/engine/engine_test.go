package engine

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// job is an in-memory operation: step names and which are done.
type job struct {
	kind    string
	names   []string
	done    []bool
	outcome string
}

func (j *job) Kind() string          { return j.kind }
func (j *job) Runnable() bool        { return true }
func (j *job) Steps() int            { return len(j.names) }
func (j *job) StepName(i int) string { return j.names[i] }
func (j *job) StepDone(i int) bool   { return j.done[i] }
func (j *job) Outcome() string       { return j.outcome }

var errDown = errors.New("peer down")

// host journals in memory; run decides what each step does.
type host struct {
	mu      sync.Mutex
	jobs    map[Key]*job
	run     func(ctx context.Context, step string, call int) error
	calls   map[string]int
	log     []string
	retries int
	failed  map[Key]string // step and whether stuck
	ok      map[Key]bool
}

func newHost(run func(ctx context.Context, step string, call int) error) *host {
	return &host{jobs: map[Key]*job{}, run: run, calls: map[string]int{}, failed: map[Key]string{}, ok: map[Key]bool{}}
}

func (h *host) Load(_ context.Context, k Key) (*job, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	j, ok := h.jobs[k]
	if !ok {
		return nil, fmt.Errorf("no job %s", k)
	}
	return j, nil
}

func (h *host) Unfinished(context.Context) ([]Key, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var keys []Key
	for k := range h.jobs {
		keys = append(keys, k)
	}
	return keys, nil
}

func (h *host) StepRunning(_ context.Context, j *job, i int) (time.Time, error) {
	h.record("running " + j.names[i])
	return time.Now(), nil
}

func (h *host) Run(ctx context.Context, j *job, i int) error {
	h.mu.Lock()
	h.calls[j.names[i]]++
	n := h.calls[j.names[i]]
	h.mu.Unlock()
	return h.run(ctx, j.names[i], n)
}

func (h *host) StepSucceeded(_ context.Context, j *job, i int) error {
	h.mu.Lock()
	j.done[i] = true
	h.mu.Unlock()
	h.record("succeeded " + j.names[i])
	return nil
}

func (h *host) Retrying(_ context.Context, _ *job, _ int, attempt int, _ error) {
	h.mu.Lock()
	h.retries = attempt
	h.mu.Unlock()
}

func (h *host) Failed(_ context.Context, j *job, i int, cause error, stuck bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, v := range h.jobs {
		if v == j {
			h.failed[k] = fmt.Sprintf("%s stuck=%v: %v", j.names[i], stuck, cause)
			j.outcome = "Failed"
		}
	}
}

func (h *host) Succeeded(_ context.Context, j *job) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, v := range h.jobs {
		if v == j {
			h.ok[k] = true
			j.outcome = "Succeeded"
		}
	}
}

func (h *host) record(s string) {
	h.mu.Lock()
	h.log = append(h.log, s)
	h.mu.Unlock()
}

func (h *host) snapshot() (log []string, failed map[Key]string, ok map[Key]bool, retries int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f := map[Key]string{}
	for k, v := range h.failed {
		f[k] = v
	}
	o := map[Key]bool{}
	for k, v := range h.ok {
		o[k] = v
	}
	return append([]string(nil), h.log...), f, o, h.retries
}

func start(t *testing.T, h *host, cfg Config) (*Engine[*job], context.CancelFunc) {
	t.Helper()
	if cfg.StepTimeout == nil {
		cfg.StepTimeout = func(string) time.Duration { return 10 * time.Second }
	}
	if cfg.Workers == 0 {
		cfg.Workers = 2
	}
	cfg.SweepEvery = time.Second
	if cfg.RetryBackoff == 0 {
		cfg.RetryBackoff = time.Millisecond
	}
	cfg.Retryable = func(err error) bool { return errors.Is(err, errDown) }
	e := New[*job](cfg, h)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	require.NoError(t, e.Start(ctx, &wg))
	t.Cleanup(func() { cancel(); wg.Wait() })
	return e, cancel
}

func TestStepsRunInOrderAndTransientFailuresAreRetried(t *testing.T) {
	h := newHost(func(_ context.Context, step string, call int) error {
		if step == "b" && call < 3 {
			return errDown
		}
		return nil
	})
	k := Key{Service: "s1", Operation: "op1"}
	h.jobs[k] = &job{kind: "upgrade", names: []string{"a", "b", "c"}, done: make([]bool, 3)}
	start(t, h, Config{})
	require.Eventually(t, func() bool { _, _, ok, _ := h.snapshot(); return ok[k] }, 5*time.Second, time.Millisecond)
	log, failed, _, retries := h.snapshot()
	require.Equal(t, []string{"running a", "succeeded a", "running b", "succeeded b", "running c", "succeeded c"}, log)
	require.Empty(t, failed)
	require.Equal(t, 2, retries, "b failed twice before it succeeded")
}

// A step retried against a target that is down lets its worker go during
// the backoff: with one worker, another service's operation runs and ends
// while the first one still retries (before, the first held the worker
// until its step's time bound, and every other operation queued behind it).
func TestRetryingStepLetsItsWorkerGo(t *testing.T) {
	h := newHost(func(_ context.Context, step string, _ int) error {
		if step == "remove-resources" {
			return errDown
		}
		return nil
	})
	down, other := Key{Service: "s1", Operation: "op1"}, Key{Service: "s2", Operation: "op2"}
	h.jobs[down] = &job{kind: "delete", names: []string{"remove-resources"}, done: make([]bool, 1)}
	e, _ := start(t, h, Config{Workers: 1, RetryBackoff: 50 * time.Millisecond,
		StepTimeout: func(string) time.Duration { return time.Minute }})
	require.Eventually(t, func() bool { _, _, _, r := h.snapshot(); return r >= 2 }, 5*time.Second, time.Millisecond)
	h.mu.Lock()
	h.jobs[other] = &job{kind: "register", names: []string{"a"}, done: make([]bool, 1)}
	h.mu.Unlock()
	e.Enqueue(other)
	require.Eventually(t, func() bool { _, _, ok, _ := h.snapshot(); return ok[other] }, 5*time.Second, time.Millisecond)
	_, failed, ok, retries := h.snapshot()
	require.False(t, ok[down])
	require.Empty(t, failed[down], "still retrying")
	require.GreaterOrEqual(t, retries, 2)
}

// A retried step keeps counting its attempts and its time bound from its
// first run across the runs the backoff separates, and is journaled as
// running once.
func TestRetriedStepKeepsItsAttemptsAndTimeBound(t *testing.T) {
	h := newHost(func(context.Context, string, int) error { return errDown })
	k := Key{Service: "s1", Operation: "op1"}
	h.jobs[k] = &job{kind: "delete", names: []string{"remove-resources"}, done: make([]bool, 1)}
	start(t, h, Config{RetryBackoff: 5 * time.Millisecond, StepTimeout: func(string) time.Duration { return 300 * time.Millisecond }})
	require.Eventually(t, func() bool { _, f, _, _ := h.snapshot(); return f[k] != "" }, 5*time.Second, time.Millisecond)
	log, failed, _, retries := h.snapshot()
	require.Contains(t, failed[k], "remove-resources stuck=true: step remove-resources of delete exceeded its time bound of 300ms")
	require.Equal(t, []string{"running remove-resources"}, log)
	require.GreaterOrEqual(t, retries, 3, "attempts count on across the retries")
}

func TestResumeSkipsDoneStepsAndFinalFailuresStop(t *testing.T) {
	final := errors.New("the package failed validation")
	h := newHost(func(_ context.Context, step string, _ int) error {
		if step == "b" {
			return final
		}
		return nil
	})
	k := Key{Service: "s1", Operation: "op1"}
	h.jobs[k] = &job{kind: "register", names: []string{"a", "b", "c"}, done: []bool{true, false, false}}
	start(t, h, Config{})
	require.Eventually(t, func() bool { _, f, _, _ := h.snapshot(); return f[k] != "" }, 5*time.Second, time.Millisecond)
	log, failed, ok, _ := h.snapshot()
	require.Equal(t, []string{"running b"}, log, "a was done before the restart; c never runs")
	require.Equal(t, "b stuck=false: the package failed validation", failed[k])
	require.False(t, ok[k])
}

func TestStepPastItsTimeBoundIsStuck(t *testing.T) {
	h := newHost(func(ctx context.Context, _ string, _ int) error {
		<-ctx.Done() // a target that never answers
		return fmt.Errorf("apply: %w", ctx.Err())
	})
	k := Key{Service: "s1", Operation: "op1"}
	h.jobs[k] = &job{kind: "delete", names: []string{"remove-resources"}, done: make([]bool, 1)}
	start(t, h, Config{StepTimeout: func(string) time.Duration { return 20 * time.Millisecond }})
	require.Eventually(t, func() bool { _, f, _, _ := h.snapshot(); return f[k] != "" }, 5*time.Second, time.Millisecond)
	_, failed, _, _ := h.snapshot()
	require.Contains(t, failed[k], "remove-resources stuck=true: step remove-resources of delete exceeded its time bound of 20ms")
}

func TestFailpointHoldsBeforeTheStepActsAndCancelRecordsNothing(t *testing.T) {
	h := newHost(func(context.Context, string, int) error { return nil })
	k := Key{Service: "s1", Operation: "op1"}
	h.jobs[k] = &job{kind: "upgrade", names: []string{"maintenance", "resources"}, done: make([]bool, 2)}
	e, _ := start(t, h, Config{Failpoints: ParseFailpoints(" upgrade/resources:before , rollback/cleanup:after")})
	require.Eventually(t, func() bool {
		log, _, _, _ := h.snapshot()
		return len(log) == 3 && log[2] == "running resources"
	}, 5*time.Second, time.Millisecond)
	h.mu.Lock()
	calls := h.calls["resources"]
	h.mu.Unlock()
	require.Zero(t, calls, "held before the step acted")

	e.Cancel("s1") // a force delete takes over
	require.Eventually(t, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return !e.running[k]
	}, 5*time.Second, time.Millisecond)
	_, failed, ok, _ := h.snapshot()
	require.Empty(t, failed, "a takeover records nothing")
	require.False(t, ok[k])
}

func TestJitterStaysWithinHalfToFull(t *testing.T) {
	for range 1000 {
		d := jitter(100 * time.Millisecond)
		require.GreaterOrEqual(t, d, 50*time.Millisecond)
		require.LessOrEqual(t, d, 100*time.Millisecond)
	}
}

// observer records what an engine.Observer is told.
type observer struct {
	mu     sync.Mutex
	events []string
}

func (o *observer) add(e string) {
	o.mu.Lock()
	o.events = append(o.events, e)
	o.mu.Unlock()
}

func (o *observer) OperationStarted(ctx context.Context, key, kind string) (context.Context, func(string)) {
	o.add("start " + kind + " " + key)
	return ctx, func(outcome string) { o.add("end " + outcome) }
}

func (o *observer) StepStarted(ctx context.Context, _, step string) (context.Context, func(error)) {
	o.add("step " + step)
	return ctx, func(err error) {
		// A retry's backoff is jittered: the record leaves its length out.
		o.add(retriedIn.ReplaceAllString(fmt.Sprintf("step %s err=%v", step, err), "(retried in)"))
	}
}

func (o *observer) snapshot() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.events...)
}

func TestObserverSeesEachStepOnceAndTheOutcome(t *testing.T) {
	h := newHost(func(_ context.Context, step string, call int) error {
		if step == "b" && call < 2 {
			return errDown // retried: a run of its own, after the backoff
		}
		if step == "c" {
			return errors.New("final")
		}
		return nil
	})
	k := Key{Service: "s1", Operation: "op1"}
	h.jobs[k] = &job{kind: "upgrade", names: []string{"a", "b", "c", "d"}, done: make([]bool, 4)}
	obs := &observer{}
	start(t, h, Config{Observer: obs})
	require.Eventually(t, func() bool { ev := obs.snapshot(); return len(ev) > 0 && ev[len(ev)-1] == "end Failed" }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{
		"start upgrade s1|op1",
		"step a", "step a err=<nil>",
		"step b", "step b err=peer down (retried in)",
		"end retrying",
		"start upgrade s1|op1",
		"step b", "step b err=<nil>",
		"step c", "step c err=final",
		"end Failed",
	}, obs.snapshot())
}

var retriedIn = regexp.MustCompile(`\(retried in [^)]*\)`)

// A takeover queues an operation again while its run is still going, then
// cancels the run: the engine must run it again once the cancelled run lets
// go, not drop the request because the key was busy.
func TestQueuedAgainWhileRunningRunsAgain(t *testing.T) {
	started := make(chan struct{}, 1)
	h := newHost(func(ctx context.Context, step string, call int) error {
		if call == 1 {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	})
	k := Key{Service: "s1", Operation: "op1"}
	h.jobs[k] = &job{kind: "delete", names: []string{"remove"}, done: make([]bool, 1)}
	e, _ := start(t, h, Config{})
	<-started
	e.Enqueue(k) // while the first run holds the key
	require.Eventually(t, func() bool { e.mu.Lock(); defer e.mu.Unlock(); return e.again[k] }, 5*time.Second, time.Millisecond)
	e.Cancel(k.Service)
	require.Eventually(t, func() bool { _, _, ok, _ := h.snapshot(); return ok[k] }, 5*time.Second, time.Millisecond, "the operation ran again and finished")
}
