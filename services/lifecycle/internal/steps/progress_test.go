package steps

import (
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

// A watch with until ends on the status, or when the operation failed.
