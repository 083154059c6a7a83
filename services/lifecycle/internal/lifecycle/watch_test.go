package lifecycle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A change of an operation's step, percent or outcome is an event of its
// own, so clients can follow progress and see an operation end on the
// watch even when status, phase and version stay the same.
func TestEventsDifferByProgress(t *testing.T) {
	now := time.Now()
	s := &Service{ID: "a", Status: StatusHealthy, Phase: PhaseUpgrading, Version: "1.0.0",
		Progress: &Progress{OperationID: "op", Type: OpUpgrade, Step: "download", Percent: 10}}
	first := eventOf(s, false, now)
	s.Progress.Percent = 20
	second := eventOf(s, false, now)
	require.Equal(t, 10, first.Progress.Percent, "an event keeps its own copy of the progress")
	require.False(t, second.sameAs(first))
	require.True(t, eventOf(s, false, now.Add(time.Second)).sameAs(second), "time alone is no change")

	s.Progress.Outcome = OutcomeFailed
	require.False(t, eventOf(s, false, now).sameAs(second), "the end of the operation is a change")

	none := eventOf(&Service{ID: "a", Status: StatusHealthy, Phase: PhaseUpgrading, Version: "1.0.0"}, false, now)
	require.False(t, none.sameAs(second))
	require.False(t, second.sameAs(none))
	require.True(t, none.sameAs(none))
}
