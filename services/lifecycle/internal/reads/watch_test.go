package reads

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// A change of an operation's step, percent or outcome is an event of its
// own, so clients can follow progress and see an operation end on the
// watch even when status, phase and version stay the same.
func TestEventsDifferByProgress(t *testing.T) {
	now := time.Now()
	s := &lifecycle.Service{ID: "a", Status: lifecycle.StatusHealthy, Phase: lifecycle.PhaseUpgrading, Version: "1.0.0",
		Progress: &lifecycle.Progress{OperationID: "op", Type: lifecycle.OpUpgrade, Step: "download", Percent: 10}}
	first := EventOf(s, false, now)
	s.Progress.Percent = 20
	second := EventOf(s, false, now)
	require.Equal(t, 10, first.Progress.Percent, "an event keeps its own copy of the progress")
	require.False(t, second.sameAs(first))
	require.True(t, EventOf(s, false, now.Add(time.Second)).sameAs(second), "time alone is no change")

	s.Progress.Outcome = lifecycle.OutcomeFailed
	require.False(t, EventOf(s, false, now).sameAs(second), "the end of the operation is a change")

	none := EventOf(&lifecycle.Service{ID: "a", Status: lifecycle.StatusHealthy, Phase: lifecycle.PhaseUpgrading, Version: "1.0.0"}, false, now)
	require.False(t, none.sameAs(second))
	require.False(t, second.sameAs(none))
	require.True(t, none.sameAs(none))
}

func TestWatchUntilEnds(t *testing.T) {
	healthy := Event{Status: lifecycle.StatusHealthy}
	require.True(t, healthy.ends(lifecycle.StatusHealthy))
	require.False(t, healthy.ends(""), "without until the stream runs on")
	require.False(t, Event{Status: lifecycle.StatusBusy, Progress: &lifecycle.Progress{Step: "download"}}.ends(lifecycle.StatusHealthy))
	require.True(t, Event{Status: lifecycle.StatusBusy, Progress: &lifecycle.Progress{Outcome: lifecycle.OutcomeFailed}}.ends(lifecycle.StatusHealthy), "a failed operation ends it")
	require.True(t, Event{Status: lifecycle.StatusMaintenance, Progress: &lifecycle.Progress{Outcome: lifecycle.OutcomeStuck}}.ends(lifecycle.StatusHealthy))
	err := New(Deps{}).Watch(t.Context(), "x", "Healthyish", func(Event) error { return nil })
	require.ErrorIs(t, err, lifecycle.ErrInvalidArgument)
	require.ErrorContains(t, err, `until: "Healthyish" is not a status: want one of Busy, Unresolved, Ready, Healthy`)
}
