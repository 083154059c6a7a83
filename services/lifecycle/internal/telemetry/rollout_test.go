package telemetry

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// gauge sums the series of a vcfsm_ gauge whose label state is state
// (every series when state is "").
func gauge(t *testing.T, tel *observability.Telemetry, name, state string) float64 {
	t.Helper()
	fams, err := tel.Registry.Gather()
	require.NoError(t, err)
	total := 0.0
	for _, f := range fams {
		if f.GetName() != "vcfsm_"+name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" && (state == "" || l.GetValue() == state) {
					total += m.GetGauge().GetValue()
				}
			}
		}
	}
	return total
}

// The gauges show a rollout from its journaling until its run ends for
// good or is interrupted (shutdown, takeover: it resumes elsewhere or
// later); a run that ends waiting keeps it.
func TestRolloutGaugesFollowTheRun(t *testing.T) {
	tel := observability.WithTracer(nil)
	o := New(tel)
	st := &lifecycle.RolloutState{State: lifecycle.RolloutRunning, Targets: []lifecycle.TargetState{
		{Supervisor: "a", State: lifecycle.TargetDone}, {Supervisor: "b", State: lifecycle.TargetWaitingWindow}, {Supervisor: "c", State: lifecycle.TargetWaitingWindow},
	}}
	for _, outcome := range []string{engine.OutcomeWaiting, engine.OutcomeRetrying, engine.OutcomeInterrupted, lifecycle.OutcomeFailed} {
		o.RolloutSaved("svc|op", st)
		require.InDelta(t, 3, gauge(t, tel, "lifecycle_rollout_targets", ""), 0)
		require.InDelta(t, 2, gauge(t, tel, "lifecycle_rollout_targets", lifecycle.TargetWaitingWindow), 0)
		require.InDelta(t, 0, gauge(t, tel, "lifecycle_rollout_targets", lifecycle.TargetMoving), 0, "every state shown")
		require.InDelta(t, 1, gauge(t, tel, "lifecycle_rollouts", lifecycle.RolloutRunning), 0)
		_, done := o.OperationStarted(context.Background(), "svc|op", lifecycle.OpRollout)
		done(outcome)
		want := 0.0
		if outcome == engine.OutcomeWaiting || outcome == engine.OutcomeRetrying {
			want = 3
		}
		require.InDelta(t, want, gauge(t, tel, "lifecycle_rollout_targets", ""), 0, outcome)
	}
	o.RolloutSaved("svc|op", st)
	st.State = lifecycle.RolloutSucceeded
	o.RolloutSaved("svc|op", st)
	require.InDelta(t, 0, gauge(t, tel, "lifecycle_rollouts", ""), 0, "its last journaling drops it")
}
