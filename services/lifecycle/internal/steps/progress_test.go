package steps

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// An apply reports per-target counts on the running operation only.
func TestApplyProgressText(t *testing.T) {
	require.Nil(t, newApplyProgress(nil, &lifecycle.Service{ID: "a"}, nil), "no operation, no progress")
	var none *applyProgress
	none.applied(t.Context(), &lifecycle.Resource{}) // a nil progress counts nothing and does not panic
	p := newApplyProgress(nil, &lifecycle.Service{ID: "a", ActiveOperation: "op"}, []*lifecycle.Resource{
		{Supervisor: "sv2"}, {Supervisor: "sv1"}, {Supervisor: "sv1"}, {},
	})
	require.Equal(t, []string{"VCF Automation", "sv1", "sv2"}, p.order)
	require.Equal(t, map[string]int{"VCF Automation": 1, "sv1": 2, "sv2": 1}, p.total)

	start := time.Now()
	msg, due := p.count(&lifecycle.Resource{Supervisor: "sv1"}, start)
	require.True(t, due, "the first count is shown")
	require.Equal(t, "applied: VCF Automation 0/1, sv1 1/2, sv2 0/1", msg)
	_, due = p.count(&lifecycle.Resource{Supervisor: "sv1"}, start.Add(time.Millisecond))
	require.False(t, due, "counts within progressEvery are not written")
	msg, due = p.count(&lifecycle.Resource{Supervisor: "sv2"}, start.Add(progressEvery))
	require.True(t, due)
	require.Equal(t, "applied: VCF Automation 0/1, sv1 2/2, sv2 1/1", msg)
	msg, due = p.count(&lifecycle.Resource{}, start.Add(progressEvery+time.Millisecond))
	require.True(t, due, "the last resource is always shown")
	require.Equal(t, "applied: VCF Automation 1/1, sv1 2/2, sv2 1/1", msg)
}

// Across more targets than a message names, it gives the totals and the
// first targets under way: its size does not grow with the Supervisors.
func TestApplyProgressSummarisesManyTargets(t *testing.T) {
	var resources []*lifecycle.Resource
	for i := range 1000 {
		for range 5 {
			resources = append(resources, &lifecycle.Resource{Supervisor: fmt.Sprintf("sv%04d", i)})
		}
	}
	p := newApplyProgress(nil, &lifecycle.Service{ID: "a", ActiveOperation: "op"}, resources)
	start := time.Now()
	var msg string
	for i, r := range resources[:2003] { // 400 Supervisors complete, 3 resources of the next
		msg, _ = p.count(r, start.Add(time.Duration(i)*progressEvery))
	}
	require.Equal(t, "applied: 2003/5000 resources, 400/1000 targets complete; under way: sv0400 3/5", msg)
	// Resources land out of order across Supervisors: the first ten under
	// way are named, the rest counted in the totals.
	for i := range 30 {
		msg, _ = p.count(&lifecycle.Resource{Supervisor: fmt.Sprintf("sv%04d", 500+i)}, start.Add(time.Hour+time.Duration(i)*progressEvery))
	}
	require.Equal(t, "applied: 2033/5000 resources, 400/1000 targets complete; under way: "+
		"sv0400 3/5, sv0500 1/5, sv0501 1/5, sv0502 1/5, sv0503 1/5, sv0504 1/5, sv0505 1/5, sv0506 1/5, sv0507 1/5, sv0508 1/5", msg)
	require.Less(t, len(msg), 300)
}

// A watch with until ends on the status, or when the operation failed.

// An operation's percent counts the steps before the current one whole,
// so a download's own percent never makes the operation's go back.
func TestOperationPercent(t *testing.T) {
	op := &lifecycle.Operation{Steps: []lifecycle.Step{{Name: "download"}, {Name: "configuration"}, {Name: "compatibility"}, {Name: "cleanup"}}}
	cases := []struct {
		step         string
		percent, out int
	}{
		{"download", 0, 0},
		{"download", 50, 12},
		{"download", 100, 25}, // = the next step starting
		{"download", 250, 25}, // a fetcher overshooting stays within its step
		{"configuration", 0, 25},
		{"cleanup", 100, 100},
		{"unknown", 40, 40},
	}
	last := -1
	for _, c := range cases {
		got := OperationPercent(op, c.step, c.percent)
		require.Equal(t, c.out, got, "%s at %d%%", c.step, c.percent)
		if c.step != "unknown" {
			require.GreaterOrEqual(t, got, last, "never back")
			last = got
		}
	}
}
