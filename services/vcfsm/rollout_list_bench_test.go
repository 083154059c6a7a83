package vcfsm_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// listWhileRollingOut lists, every 50 ms for 20 s, while a rollout of
// the one real service (on seededInventory's 10 Supervisors, a wave per
// Supervisor soaking 3 s each) journals its progress on the service
// about every second: each change drops the lists lifecycle keeps, so
// the first list after it scans. It reports the p50 and p99 of those
// lists and the service changes per second the watch saw.
func listWhileRollingOut(b *testing.B, w *scaleWorld, list func() time.Duration) {
	id := w.create(b, w.sources[0])
	w.waitStatus(b, id, "Unresolved")
	w.activate(b, id)
	require.Equal(b, "Healthy", w.waitStatus(b, id, "Healthy", "Unhealthy").Status)
	var waves []string
	for i := range 10 {
		waves = append(waves, fmt.Sprintf(`{"regions":["region-%02d"],"soak":"3s"}`, i))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, err := openStream(b, ctx, &http.Client{}, w.box, id)
	require.NoError(b, err)
	upgradeInWaves(b, w.world, id, w.sources[1], `{"waves":[`+strings.Join(waves, ",")+`]}`)
	poll(b, "the rollout running", time.Minute, func() rolloutView { return w.rollout(b, id) }, func(r rolloutView) bool { return r.State == "Running" })

	var changes atomic.Int64
	go func() {
		for range events.ev {
			<-events.at
			changes.Add(1)
		}
	}()
	changes.Store(0)
	window := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	stopProfile := profileWindow(b, "list-rollout")
	start := time.Now()
	var lat []time.Duration
	for time.Now().Before(window) {
		<-tick.C
		lat = append(lat, list())
	}
	stopProfile()
	seen := changes.Load()
	elapsed := time.Since(start)
	require.Positive(b, seen, "the rollout changed the service meanwhile")
	b.ReportMetric(percentileMS(lat, 99), "ms-p99-rollout")
	b.ReportMetric(percentileMS(lat, 50), "ms-p50-rollout")
	b.ReportMetric(float64(seen)/elapsed.Seconds(), "changes-per-s")
}
