package upgradepath

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/compat"
)

// catalog5000 is 5,000 registered versions of one package, 1.0.0 to
// 1.4999.0; the newest accepts upgrades only from 1.4000.0 on, and every
// version is checked against a Supervisor constraint.
func catalog5000() Request {
	available := make([]compat.PackageVersion, 5000)
	for i := range available {
		available[i] = withSupervisor(v(fmt.Sprintf("1.%d.0", i), "", ""), ">=9.0.0")
	}
	available[4999].Constraints.SourceUpgrade = ">=1.4000.0"
	return Request{Installed: available[0], Available: available, Environments: []compat.Environment{sv1}}
}

// BenchmarkCatalog plans the upgrade path from the oldest to the newest
// of 5,000 registered versions of one package.
func BenchmarkCatalog(b *testing.B) {
	p := newPlanner(b)
	req := catalog5000()
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		plan, err := p.Plan(req)
		total += time.Since(start)
		require.NoError(b, err)
		require.Equal(b, []string{"1.4998.0", "1.4999.0"}, plan.Path)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-plan")
}

// Over 5,000 versions a path of two hops is found; one that would need
// more hops is refused with a clear bound rather than evaluating every
// pair.
func TestPlanOverThousandsOfVersions(t *testing.T) {
	p := newPlanner(t)
	req := catalog5000()
	plan, err := p.Plan(req)
	require.NoError(t, err)
	require.True(t, plan.Found)
	require.Equal(t, []string{"1.4998.0", "1.4999.0"}, plan.Path)
	require.Len(t, plan.RefusedHops, 1, "the direct hop is explained")
	require.Contains(t, plan.Message, "the direct upgrade is refused")

	for i := 1; i < 5000; i++ {
		req.Available[i].Constraints.SourceUpgrade = fmt.Sprintf(">=1.%d.0", i-1) // one minor at a time
	}
	_, err = p.Plan(req)
	require.ErrorContains(t, err, "no path of one or two hops: at most 1000 are planned over hop by hop")
}
