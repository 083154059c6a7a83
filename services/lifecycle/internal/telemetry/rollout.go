package telemetry

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/ops"
)

var _ ops.RolloutObserver = (*Observer)(nil)

// targetStates are the target states the gauge always shows (0 when no
// target is in one), rolloutStates the states of a running rollout.
var (
	targetStates = []string{
		lifecycle.TargetPending, lifecycle.TargetWaitingWindow, lifecycle.TargetBlocked, lifecycle.TargetMoving,
		lifecycle.TargetVerifying, lifecycle.TargetDone, lifecycle.TargetFailed, lifecycle.TargetRollingBack, lifecycle.TargetRolledBack,
	}
	rolloutStates = []string{
		lifecycle.RolloutRunning, lifecycle.RolloutWaitingApproval, lifecycle.RolloutPaused,
		lifecycle.RolloutRollingBack, lifecycle.RolloutRollbackRefused,
	}
)

// rolloutMetrics are the rollouts' metrics: waves, the rollback's
// duration, final states, and the gauges of the rollouts this replica
// runs (by engine key: their state and their targets' states).
type rolloutMetrics struct {
	tracer        trace.Tracer
	wavesStarted  *prometheus.CounterVec
	wavesFinished *prometheus.CounterVec
	rollback      prometheus.Observer
	finished      *prometheus.CounterVec

	mu      sync.Mutex
	running map[string]rolloutSeen
}

// rolloutSeen is what the last journaling of a rollout showed.
type rolloutSeen struct {
	state   string
	targets map[string]int
}

func newRolloutMetrics(tel *observability.Telemetry, tracer trace.Tracer) *rolloutMetrics {
	m := &rolloutMetrics{
		tracer: tracer,
		wavesStarted: tel.NewCounterVec("lifecycle_rollout_waves_started_total",
			"Rollout waves started, by direction (forward: a wave began moving its targets; rollback: its rollback began moving them back).", "direction"),
		wavesFinished: tel.NewCounterVec("lifecycle_rollout_waves_finished_total",
			"Rollout waves ended, by direction and outcome (forward: Done, Failed, Aborted; rollback: RolledBack).", "direction", "outcome"),
		rollback: tel.NewHistogramVec("lifecycle_rollout_rollback_duration_seconds",
			"Rollbacks of a rollout, from its turn to the rollback to the last wave Healthy on the previous version.",
			observability.SlowBuckets).WithLabelValues(),
		finished: tel.NewCounterVec("lifecycle_rollouts_finished_total",
			"Rollouts ended, by final state (Succeeded, RolledBack, Failed).", "state"),
		running: map[string]rolloutSeen{},
	}
	tel.MustRegister(&rolloutCollector{m: m,
		targets: prometheus.NewDesc(observability.Namespace+"_lifecycle_rollout_targets",
			"Targets (Supervisors) of the rollouts this replica runs, by target state.", []string{"state"}, nil),
		rollouts: prometheus.NewDesc(observability.Namespace+"_lifecycle_rollouts",
			"Rollouts this replica runs, by rollout state.", []string{"state"}, nil),
	})
	return m
}

// RolloutSaved keeps the rollout's counts for the gauges; its last
// journaling (Succeeded, RolledBack) drops it.
func (o *Observer) RolloutSaved(key string, st *lifecycle.RolloutState) {
	m := o.rollouts
	m.mu.Lock()
	defer m.mu.Unlock()
	if st.State == lifecycle.RolloutSucceeded || st.State == lifecycle.RolloutRolledBack {
		delete(m.running, key)
		return
	}
	seen := rolloutSeen{state: st.State, targets: map[string]int{}}
	for _, t := range st.Targets {
		seen.targets[t.State]++
	}
	m.running[key] = seen
}

// WaveStarted counts a wave (or its rollback) begun.
func (o *Observer) WaveStarted(direction string) {
	o.rollouts.wavesStarted.WithLabelValues(direction).Inc()
}

// WaveEnded counts the wave and records its span, from the start the
// rollout journaled to now, a child of the step run that ended it.
func (o *Observer) WaveEnded(ctx context.Context, st *lifecycle.RolloutState, k int, direction, outcome string) {
	m := o.rollouts
	m.wavesFinished.WithLabelValues(direction, outcome).Inc()
	if k < 0 || k >= len(st.Waves) {
		return
	}
	ws := st.Waves[k]
	start, name := ws.StartedAt, "rollout wave"
	if direction == ops.WaveRollback {
		start, name = ws.RollbackStartedAt, "rollout rollback-wave"
	}
	if start.IsZero() {
		start = time.Now()
	}
	var targets, done, failed int
	for _, t := range st.Targets {
		if t.Wave != k {
			continue
		}
		targets++
		switch t.State {
		case lifecycle.TargetDone, lifecycle.TargetRolledBack:
			done++
		case lifecycle.TargetFailed, lifecycle.TargetBlocked:
			failed++
		}
	}
	_, span := m.tracer.Start(ctx, name, trace.WithTimestamp(start), trace.WithAttributes(
		attribute.Int("vcfsm.rollout.wave", k+1),
		attribute.String("vcfsm.rollout.wave_name", fleet.Name(&st.Strategy, k)),
		attribute.String("vcfsm.rollout.direction", direction),
		attribute.String("vcfsm.rollout.wave_outcome", outcome),
		attribute.String("vcfsm.rollout.to_version", st.ToVersion),
		attribute.Int("vcfsm.rollout.targets", targets),
		attribute.Int("vcfsm.rollout.targets_done", done),
		attribute.Int("vcfsm.rollout.targets_failed", failed),
	))
	if outcome == ops.WaveFailed {
		span.SetStatus(codes.Error, st.Reason)
	}
	span.End()
}

// RolledBack times a rollout's rollback.
func (o *Observer) RolledBack(d time.Duration) { o.rollouts.rollback.Observe(d.Seconds()) }

// rolloutEnded is told how a run of a rollout ended: a final outcome
// counts the rollout, and any end but a wait leaves this replica's
// gauges (the rollout is over, or resumes here or on another replica);
// a retry's backoff is a wait.
func (m *rolloutMetrics) rolloutEnded(key, outcome string) {
	switch outcome {
	case lifecycle.OutcomeSucceeded:
		m.finished.WithLabelValues(lifecycle.RolloutSucceeded).Inc()
	case lifecycle.OutcomeRolledBack:
		m.finished.WithLabelValues(lifecycle.RolloutRolledBack).Inc()
	case lifecycle.OutcomeFailed, lifecycle.OutcomeStuck:
		m.finished.WithLabelValues(lifecycle.RolloutFailed).Inc()
	case engine.OutcomeWaiting, engine.OutcomeRetrying:
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.running, key)
}

type rolloutCollector struct {
	m                 *rolloutMetrics
	targets, rollouts *prometheus.Desc
}

func (c *rolloutCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.targets
	ch <- c.rollouts
}

func (c *rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	targets, rollouts := map[string]int{}, map[string]int{}
	c.m.mu.Lock()
	for _, r := range c.m.running {
		rollouts[r.state]++
		for s, n := range r.targets {
			targets[s] += n
		}
	}
	c.m.mu.Unlock()
	emit := func(desc *prometheus.Desc, counts map[string]int, known []string) {
		for _, s := range known {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(counts[s]), s)
		}
		for s, n := range counts {
			if !slices.Contains(known, s) {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(n), s)
			}
		}
	}
	emit(c.targets, targets, targetStates)
	emit(c.rollouts, rollouts, rolloutStates)
}
