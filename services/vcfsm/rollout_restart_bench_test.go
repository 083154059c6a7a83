package vcfsm_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The 1,000-Supervisor rollout of BenchmarkRollout1000 with the lifecycle
// binary in its own process, SIGKILLed when the rollout is about to start
// its third wave (the failpoint rollout/wave-3:before: 110 of 1,000
// Supervisors moved), then restarted on the same data. s-to-ready is
// from the restart to the service answered (GET); s-to-healthy from the
// restart to the service Healthy at 2.0.0, the rollout resumed and
// finished. The peers and the gateway run in this process.
func BenchmarkRolloutRestart(b *testing.B) {
	bin := buildLifecycle(b)
	peers := startPeers(b)
	var ready, healthy time.Duration
	for range b.N {
		c := newScaleProcess(b, bin, peers)
		sources := publishScale(b, c.world, scaleUpgrade5000...)
		c.restart(b, "rollout/wave-3:before")
		id := c.create(b, sources[0])
		c.waitStatus(b, id, "Unresolved")
		c.activate(b, id)
		require.Equal(b, "Healthy", c.waitStatus(b, id, "Healthy", "Unhealthy").Status)
		upgradeInWaves(b, c.world, id, sources[1], threeWaves1000())
		select {
		case <-c.reached:
		case <-time.After(10 * time.Minute):
			b.Fatal("the rollout did not reach its third wave")
		}
		r := c.rollout(b, id)
		moved := 0
		for _, t := range r.Targets {
			if t.Version == "2.0.0" {
				moved++
			}
		}
		require.Equal(b, 110, moved, "two waves moved when killed")
		c.kill(b)

		start := time.Now()
		c.restart(b, "")
		poll(b, "the service answered", time.Minute, func() int {
			return c.box.Do(b, http.MethodGet, "/v2/vcf-services/"+id, nil).Status
		}, func(s int) bool { return s == http.StatusOK })
		ready += time.Since(start)
		c.waitCount(b, "version==2.0.0;status==Healthy", 1)
		healthy += time.Since(start)
		r = c.rollout(b, id)
		require.Equal(b, "Succeeded", r.State)
		for _, t := range r.Targets {
			require.Equal(b, "2.0.0", t.Version, t.Supervisor)
		}
		c.stop(b)
	}
	b.ReportMetric(ready.Seconds()/float64(b.N), "s-to-ready")
	b.ReportMetric(healthy.Seconds()/float64(b.N), "s-to-healthy")
}

// scaleSettings are the scale benchmarks': a step over 1,000
// Supervisors takes longer than the crash tests allow.
var scaleSettings = processSettings{reconcile: time.Second, stepTimeout: 5 * time.Minute, ready: time.Minute, client: 60 * time.Second}

// newScaleProcess is a crashWorld over the scale inventory (100 regions
// of 10 Supervisors) whose lifecycle binary runs with the scale
// benchmarks' settings; restart starts it.
func newScaleProcess(b testing.TB, bin string, peers peerServices) *crashWorld {
	return newProcessWorld(b, bin, peers, scaleInventory(100, 10), "", scaleSettings)
}
