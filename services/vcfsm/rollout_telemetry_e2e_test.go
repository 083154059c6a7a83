package vcfsm_test

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// tracedWorld is a world whose spans rec records.
func tracedWorld(t *testing.T) (*world, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return newWorld(t, fastRollouts, func(c *app.Config) { c.Telemetry = observability.WithTracer(tp) }), rec
}

// waveSpan is a wave's span as the tests read it.
type waveSpan struct {
	name, waveName, direction, outcome string
	wave, targets, done, failed        int64
	parentValid                        bool
	start, end                         time.Time
}

// waveSpans are the ended wave spans, in the order they ended.
func waveSpans(rec *tracetest.SpanRecorder) []waveSpan {
	var out []waveSpan
	for _, s := range rec.Ended() {
		if s.Name() != "rollout wave" && s.Name() != "rollout rollback-wave" {
			continue
		}
		ws := waveSpan{name: s.Name(), parentValid: s.Parent().IsValid(), start: s.StartTime(), end: s.EndTime()}
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "vcfsm.rollout.wave":
				ws.wave = kv.Value.AsInt64()
			case "vcfsm.rollout.wave_name":
				ws.waveName = kv.Value.AsString()
			case "vcfsm.rollout.direction":
				ws.direction = kv.Value.AsString()
			case "vcfsm.rollout.wave_outcome":
				ws.outcome = kv.Value.AsString()
			case "vcfsm.rollout.targets":
				ws.targets = kv.Value.AsInt64()
			case "vcfsm.rollout.targets_done":
				ws.done = kv.Value.AsInt64()
			case "vcfsm.rollout.targets_failed":
				ws.failed = kv.Value.AsInt64()
			}
		}
		out = append(out, ws)
	}
	return out
}

// counts is a metric's value under labels, rounded (every series read
// here counts events or targets).
func (m metrics) count(name string, kv ...string) int {
	want := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		want[kv[i]] = kv[i+1]
	}
	return int(math.Round(m.value(name, want)))
}

// A rollout held for approval before its second wave shows on the gauges
// (its state, its targets by state); once approved and done it leaves
// them, and the counters and spans say what its waves did: two started,
// two Done, one span each with its index and target counts, a child of
// the step run that ended it.
func TestRolloutMetricsAndSpans(t *testing.T) {
	w, rec := tracedWorld(t)
	id := w.installed(t, w.publish(t, v1))
	src2 := w.publish(t, v2)
	before := scrape(t, w.box.MetricsURL)

	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`,"rollout":{"strategy":`+fmt.Sprintf(canaryThenRest, `,"approval":true`)+`}}`, http.StatusAccepted)
	waitRollout(t, w, id, "WaitingApproval")
	held := scrape(t, w.box.MetricsURL)
	require.Equal(t, 1, held.count("vcfsm_lifecycle_rollouts", "state", "WaitingApproval"))
	require.Equal(t, 1, held.count("vcfsm_lifecycle_rollouts"), "one rollout running")
	require.Equal(t, 1, held.count("vcfsm_lifecycle_rollout_targets", "state", "Done"), "the canary")
	require.Equal(t, 1, held.count("vcfsm_lifecycle_rollout_targets", "state", "Pending"), "the rest")
	require.Equal(t, 2, held.count("vcfsm_lifecycle_rollout_targets"))
	require.Equal(t, 1, held.count("vcfsm_lifecycle_rollout_waves_started_total", "direction", "forward")-before.count("vcfsm_lifecycle_rollout_waves_started_total", "direction", "forward"))
	require.Equal(t, 1, held.count("vcfsm_lifecycle_rollout_waves_finished_total", "direction", "forward", "outcome", "Done"))

	require.Equal(t, http.StatusOK, w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/approve", map[string]any{}).Status)
	waitRollout(t, w, id, "Succeeded")
	after := poll(t, "the rollout counted as Succeeded", 30*time.Second, func() metrics { return scrape(t, w.box.MetricsURL) }, func(m metrics) bool {
		return m.count("vcfsm_lifecycle_rollouts_finished_total", "state", "Succeeded") == 1
	})
	require.Equal(t, 2, after.count("vcfsm_lifecycle_rollout_waves_started_total", "direction", "forward"))
	require.Equal(t, 2, after.count("vcfsm_lifecycle_rollout_waves_finished_total", "direction", "forward", "outcome", "Done"))
	require.Equal(t, 2, after.count("vcfsm_lifecycle_rollout_waves_finished_total"), "nothing else ended")
	require.Equal(t, 0, after.count("vcfsm_lifecycle_rollout_waves_started_total", "direction", "rollback"))
	require.Equal(t, 0, after.count("vcfsm_lifecycle_rollout_rollback_duration_seconds"))
	require.Equal(t, 1, after.count("vcfsm_lifecycle_rollouts_finished_total"))
	require.Equal(t, 0, after.count("vcfsm_lifecycle_rollouts"), "the gauges forget an ended rollout")
	require.Equal(t, 0, after.count("vcfsm_lifecycle_rollout_targets"))

	spans := waveSpans(rec)
	require.Len(t, spans, 2, "%+v", spans)
	for i, s := range spans {
		require.Equal(t, "rollout wave", s.name)
		require.Equal(t, int64(i+1), s.wave)
		require.Equal(t, []string{"canary", "rest"}[i], s.waveName)
		require.Equal(t, "forward", s.direction)
		require.Equal(t, "Done", s.outcome)
		require.Equal(t, []int64{1, 1, 0}, []int64{s.targets, s.done, s.failed})
		require.True(t, s.parentValid, "a child of the step run that ended it")
		require.False(t, s.end.Before(s.start))
	}
	require.False(t, spans[1].start.Before(spans[0].end), "wave 2 starts after wave 1 ends")
}

// A rollout whose second wave fails rolls back both waves: the counters
// show the failed wave, the two rollback waves and one rollback timed,
// the rollout ends RolledBack, and the spans say so, rollback waves in
// reverse order.
func TestRolloutRollbackMetricsAndSpans(t *testing.T) {
	w, rec := tracedWorld(t)
	id := w.installed(t, w.publish(t, v1))
	src2 := w.publish(t, v2)
	require.NoError(t, w.sim.InjectFault(simulator.Fault{Scope: "supervisor-eu1", Kind: "SupervisorService", Op: "apply", Effect: simulator.EffectUnhealthy, Times: 1}))

	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`,"rollout":{"strategy":`+fmt.Sprintf(canaryThenRest, "")+`}}`, http.StatusAccepted)
	waitRollout(t, w, id, "RolledBack")
	m := poll(t, "the rollout counted as RolledBack", 30*time.Second, func() metrics { return scrape(t, w.box.MetricsURL) }, func(m metrics) bool {
		return m.count("vcfsm_lifecycle_rollouts_finished_total", "state", "RolledBack") == 1
	})
	require.Equal(t, 2, m.count("vcfsm_lifecycle_rollout_waves_started_total", "direction", "forward"))
	require.Equal(t, 1, m.count("vcfsm_lifecycle_rollout_waves_finished_total", "direction", "forward", "outcome", "Done"))
	require.Equal(t, 1, m.count("vcfsm_lifecycle_rollout_waves_finished_total", "direction", "forward", "outcome", "Failed"))
	require.Equal(t, 2, m.count("vcfsm_lifecycle_rollout_waves_started_total", "direction", "rollback"))
	require.Equal(t, 2, m.count("vcfsm_lifecycle_rollout_waves_finished_total", "direction", "rollback", "outcome", "RolledBack"))
	require.Equal(t, 1, m.count("vcfsm_lifecycle_rollout_rollback_duration_seconds"), "one rollback timed")
	require.Equal(t, 1, m.count("vcfsm_lifecycle_rollouts_finished_total"))
	require.Equal(t, 0, m.count("vcfsm_lifecycle_rollout_targets"))

	spans := waveSpans(rec)
	var got []string
	for _, s := range spans {
		got = append(got, fmt.Sprintf("%s %d %s %d/%d/%d", s.direction, s.wave, s.outcome, s.targets, s.done, s.failed))
	}
	require.Equal(t, []string{
		"forward 1 Done 1/1/0", "forward 2 Failed 1/0/1",
		"rollback 2 RolledBack 1/1/0", "rollback 1 RolledBack 1/1/0",
	}, got)
	back := slices.IndexFunc(spans, func(s waveSpan) bool { return s.direction == "rollback" })
	require.False(t, spans[back+1].start.Before(spans[back].end), "wave 1 rolls back once wave 2 is back")
}
