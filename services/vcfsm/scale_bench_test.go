package vcfsm_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/scaletest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// The issue-17 scale: one SupervisorService and four registries per
// Supervisor, 100 regions of 10 Supervisors = 5,000 resources. The
// upgrade keeps the SupervisorService (unchanged), gives registries 1..3
// a new username (reconfigured), removes registry 0 and adds registry 4.
var scaleUpgrade5000 = []bundletest.BundleSpec{
	scaleVersion("1.0.0", 4, 0, "a", "admin"),
	scaleVersion("2.0.0", 4, 1, "a", "operator"),
}

// peakRSS is the process's peak resident set (VmHWM) in MiB.
func peakRSS(tb testing.TB) float64 {
	f, err := os.Open("/proc/self/status")
	require.NoError(tb, err)
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			require.NoError(tb, err)
			return kb / 1024
		}
	}
	tb.Fatal("no VmHWM in /proc/self/status")
	return 0
}

// Activating one service rendering 5,000 resources across 1,000
// Supervisors in 100 regions, from the PATCH to Healthy (watched).
func BenchmarkActivate5000(b *testing.B) {
	w := newScaleWorld(b, 100, 10, scaleUpgrade5000...)
	var total, cpu time.Duration
	for range b.N {
		id := w.create(b, w.sources[0])
		w.waitStatus(b, id, "Unresolved")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		grants := w.grants(b, id)
		events := w.watch(b, ctx, id)
		if os.Getenv("VCFSM_BENCH_STEPS") != "" {
			trace := openRaw(b, ctx, w.box, id)
			defer trace()
		}
		stopProfile := profileWindow(b, "activate")
		start, cpu0 := time.Now(), cpuTime(b)
		w.activateWith(b, id, grants)
		w.waitWatch(b, ctx, events, "Healthy", "")
		total += time.Since(start)
		cpu += cpuTime(b) - cpu0
		stopProfile()
		cancel()
		require.Len(b, w.get(b, id).State.Resources, 5000)
		logSteps(b, w.box, id)
		w.remove(b, id)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-healthy")
	// The CPU the whole process (every service, the simulated targets,
	// not the renderer's ytt workers) used from the PATCH to Healthy: less
	// sensitive to the machine's load than the wall time.
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s")
	b.ReportMetric(peakRSS(b), "MiB-peak-rss")
}

// Upgrading it: per Supervisor 1 unchanged, 3 reconfigured, 1 removed and
// 1 new resource, from the PATCH to Healthy at 2.0.0.
func BenchmarkUpgrade5000(b *testing.B) {
	w := newScaleWorld(b, 100, 10, scaleUpgrade5000...)
	var total time.Duration
	for range b.N {
		id := w.create(b, w.sources[0])
		w.waitStatus(b, id, "Unresolved")
		w.activate(b, id)
		if v := w.waitStatus(b, id, "Healthy", "Unhealthy"); v.Status != "Healthy" {
			b.Fatalf("activation: %+v", v.State.ErrorDetails)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		events := w.watch(b, ctx, id)
		start := time.Now()
		resp := w.box.Do(b, http.MethodPatch, "/v2/vcf-services/"+id, []byte(`{"source":"`+w.sources[1]+`"}`))
		require.Equal(b, http.StatusAccepted, resp.Status, "%s", resp.Body)
		w.waitWatch(b, ctx, events, "Healthy", "2.0.0")
		total += time.Since(start)
		cancel()
		v := w.get(b, id)
		require.Len(b, v.State.Resources, 5000)
		for _, r := range v.State.Resources {
			require.Equal(b, "2.0.0", r.OwnerVersion)
		}
		w.remove(b, id)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-healthy")
	b.ReportMetric(peakRSS(b), "MiB-peak-rss")
}

// seeded writes a data directory with n Healthy services of res resources
// each (spread over 10 Supervisors) and their journals.
func seeded(b testing.TB, n, res int) (dir string, opt onebox.Option) {
	dir = b.TempDir()
	require.NoError(b, scaletest.Seed(context.Background(), dir, scaletest.Spec{Services: n, Resources: res}))
	inv := filepath.Join(b.TempDir(), "inventory.yaml")
	require.NoError(b, os.WriteFile(inv, []byte(scaleInventory(10, 1)), 0o600))
	return dir, func(c *app.Config) {
		c.Lifecycle.DataDir = dir
		c.Lifecycle.InventoryFile = inv
	}
}

// Process start to answering a GET, with 10,000 services (20 resources
// and a journal each) in the store. The first start on the seeded store
// also checks every resource for Secrets to seal (once per store and
// key); it is reported apart as s-first-start.
func BenchmarkRestart(b *testing.B) {
	_, opt := seeded(b, 10000, 20)
	ready := func() time.Duration {
		start := time.Now()
		box := onebox.Start(b, opt)
		resp := box.Do(b, http.MethodGet, "/v2/vcf-services/"+scaletest.ID(9999), nil)
		took := time.Since(start)
		require.Equal(b, http.StatusOK, resp.Status, "%s", resp.Body)
		require.NoError(b, box.Stop())
		return took
	}
	first := ready()
	var total time.Duration
	for range b.N {
		total += ready()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-ready")
	b.ReportMetric(first.Seconds(), "s-first-start")
}

// cpuTime is the CPU (user + system) this process used so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// 10,000 Healthy services with 20 resources each and nothing changing:
// the CPU the whole process uses over a minute, after a start-up
// allowance of 10 s, in percent of one core. The controllers run at the
// product's default period.
func BenchmarkIdle(b *testing.B) {
	_, opt := seeded(b, 10000, 20)
	box := onebox.Start(b, opt)
	require.Equal(b, http.StatusOK, box.Do(b, http.MethodGet, "/v2/vcf-services/"+scaletest.ID(0), nil).Status)
	settle := time.NewTimer(10 * time.Second)
	<-settle.C
	var pct float64
	for range b.N {
		cpu0, wall0 := cpuTime(b), time.Now()
		window := time.NewTimer(time.Minute)
		<-window.C
		pct += 100 * float64(cpuTime(b)-cpu0) / float64(time.Since(wall0))
	}
	b.ReportMetric(pct/float64(b.N), "pct-core")
	v := box.Do(b, http.MethodGet, "/v2/vcf-services/"+scaletest.ID(0), nil)
	require.Contains(b, string(v.Body), `"status":"Healthy"`, "the services stayed Healthy")
}

// A FIQL list, page of 25, over 10,000 services through the gateway:
// p99 latency of the same list asked again and again (ms-p99: lifecycle
// keeps a filter's matches while no service changes), and of lists it
// has not kept (ms-p99-scan: each asks a filter of its own, matching the
// same services, so every service is scanned, as after a change), and of
// the kept list while a rollout changes a service every second
// (ms-p99-rollout, issue 26).
func BenchmarkRESTList10k(b *testing.B) {
	_, opt := seeded(b, 10000, 2)
	// The seeded 10,000 and one real service a rollout changes (the last
	// phase), at the product's reconcile period.
	w := newScaleWorldWith(b, 10, 1, []onebox.Option{opt, func(c *app.Config) { c.Lifecycle.ReconcileInterval = 0 }},
		scaleVersion("1.0.0", 1, 0, "a", "admin"), scaleVersion("2.0.0", 1, 0, "a", "operator"))
	box := w.box
	const filter = "(vendor==broadcom;status==Healthy),labels.team==data"
	list := func(filter string) time.Duration {
		start := time.Now()
		resp := box.Do(b, http.MethodGet, "/v2/vcf-services?page=3&pageSize=25&sortDesc=name&filter="+url.QueryEscape(filter), nil)
		d := time.Since(start)
		if resp.Status != http.StatusOK {
			b.Fatalf("status %d: %s", resp.Status, resp.Body)
		}
		return d
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		lat = append(lat, list(filter))
	}
	b.StopTimer()
	b.ReportMetric(percentileMS(lat, 99), "ms-p99")
	b.ReportMetric(percentileMS(lat, 50), "ms-p50")

	scans := make([]time.Duration, 0, 100)
	for i := range cap(scans) {
		scans = append(scans, list(fmt.Sprintf("%s;name!=none%d", filter, i)))
	}
	b.ReportMetric(percentileMS(scans, 99), "ms-p99-scan")
	b.ReportMetric(percentileMS(scans, 50), "ms-p50-scan")

	listWhileRollingOut(b, w, func() time.Duration { return list(filter) })
}

// percentileMS is the p-th percentile of lat in milliseconds (lat is
// sorted in place).
func percentileMS(lat []time.Duration, p int) float64 {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return float64(lat[len(lat)*p/100].Microseconds()) / 1000
}

// stream is one open watch: arrived receives the time each event with a
// given lifecycle state was read.
type stream struct {
	ev chan event
	at chan time.Time
}

// openStream opens a watch with client (streams need a client without
// an overall timeout).
func openStream(tb testing.TB, ctx context.Context, client *http.Client, box *onebox.Box, id string) (*stream, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, box.URL+"/v2/vcf-services/"+id+"/watch", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+onebox.Token)
	resp, err := client.Do(req) //nolint:bodyclose // closed by the reader goroutine below
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("watch: status %d", resp.StatusCode)
	}
	s := &stream{ev: make(chan event, 16), at: make(chan time.Time, 16)}
	go func() {
		defer func() { _ = resp.Body.Close() }()
		defer close(s.ev)
		dec := json.NewDecoder(resp.Body)
		for {
			var m struct {
				Result event `json:"result"`
			}
			if err := dec.Decode(&m); err != nil {
				if ctx.Err() == nil {
					tb.Logf("watch stream ended: %v", err)
				}
				return
			}
			now := time.Now()
			select {
			case s.ev <- m.Result:
				s.at <- now
			case <-ctx.Done():
				return
			}
		}
	}()
	return s, nil
}

// until returns when the stream saw an event with the lifecycle state.
func (s *stream) until(state string) (time.Time, error) {
	for ev := range s.ev {
		at := <-s.at
		if ev.LifecycleState == state {
			return at, nil
		}
	}
	return time.Time{}, fmt.Errorf("stream ended before %s", state)
}

// 1,000 open watch streams on one service; one PATCH (pause, then resume
// on the next round): the p99 over streams of the time from sending the
// PATCH to the event's arrival.
func BenchmarkWatchFanout(b *testing.B) {
	// One principal holds every stream here: lift its watch cap (16 per
	// principal). The gRPC streams per connection (the gateway carries
	// every watch on its one connection to lifecycle) keep their default.
	w := newWorld(b, func(c *app.Config) {
		c.Gateway.Limits.MaxWatches = 2000
	})
	id := w.installed(b, w.publish(b, v1))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1100}}
	var lat []time.Duration
	for i := range b.N {
		ctx, cancel := context.WithCancel(context.Background())
		streams := make([]*stream, 1000)
		errs := make([]error, len(streams))
		var opening sync.WaitGroup
		sem := make(chan struct{}, 32)
		for j := range streams {
			sem <- struct{}{}
			opening.Go(func() {
				defer func() { <-sem }()
				streams[j], errs[j] = openStream(b, ctx, client, w.box, id)
			})
		}
		opening.Wait()
		for _, err := range errs {
			require.NoError(b, err)
		}
		from, to := "active", "paused"
		if i%2 == 1 {
			from, to = "paused", "active"
		}
		for _, s := range streams {
			_, err := s.until(from)
			require.NoError(b, err)
		}
		start := time.Now()
		patch(b, w, id, `{"lifecycleState":"`+to+`"}`, http.StatusAccepted)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, s := range streams {
			wg.Go(func() {
				at, err := s.until(to)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					b.Error(err)
					return
				}
				lat = append(lat, at.Sub(start))
			})
		}
		wg.Wait()
		cancel()
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "ms-p99")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "ms-p50")
}

// profileWindow writes a CPU profile of the measured window only (not of
// the set-up, the creation or the removal) to $VCFSM_BENCH_PROFILE/name.cpu
// when that variable names a directory: a profiling aid for the scale
// benchmarks. The returned function stops it.
func profileWindow(b *testing.B, name string) func() {
	dir := os.Getenv("VCFSM_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".cpu"))
	require.NoError(b, err)
	require.NoError(b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(b, f.Close())
	}
}

// logSteps prints the service's last operation's steps with their times
// (to stderr: benchmark logs are truncated) when VCFSM_BENCH_STEPS is set:
// a debugging aid for the scale benchmarks.
func logSteps(b *testing.B, box *onebox.Box, id string) {
	if os.Getenv("VCFSM_BENCH_STEPS") == "" {
		return
	}
	var h struct {
		Operations []struct {
			Type       string `json:"type"`
			StartedAt  string `json:"startedAt"`
			FinishedAt string `json:"finishedAt"`
			Steps      []struct {
				Name       string `json:"name"`
				StartedAt  string `json:"startedAt"`
				FinishedAt string `json:"finishedAt"`
			} `json:"steps"`
		} `json:"operations"`
	}
	// Steps not run have no times ("").
	took := func(from, to string) time.Duration {
		a, errA := time.Parse(time.RFC3339Nano, from)
		z, errZ := time.Parse(time.RFC3339Nano, to)
		if errA != nil || errZ != nil {
			return 0
		}
		return z.Sub(a)
	}
	resp := box.Do(b, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	if err := json.Unmarshal(resp.Body, &h); err != nil || len(h.Operations) == 0 {
		fmt.Fprintf(os.Stderr, "history: %v: %.2000s\n", err, resp.Body)
		return
	}
	op := h.Operations[len(h.Operations)-1]
	fmt.Fprintf(os.Stderr, "%s %s\n", op.Type, took(op.StartedAt, op.FinishedAt))
	for _, st := range op.Steps {
		fmt.Fprintf(os.Stderr, "%s %-14s %s\n", op.Type, st.Name, took(st.StartedAt, st.FinishedAt))
	}
}

// openRaw prints every watch event's status and step with its arrival
// time to stderr (a debugging aid for the benchmarks, with VCFSM_BENCH_STEPS
// set).
func openRaw(b *testing.B, ctx context.Context, box *onebox.Box, id string) func() {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, box.URL+"/v2/vcf-services/"+id+"/watch", nil)
	require.NoError(b, err)
	req.Header.Set("Authorization", "Bearer "+onebox.Token)
	resp, err := box.Client.Do(req) //nolint:bodyclose // closed by the goroutine below
	require.NoError(b, err)
	done := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		defer func() { _ = resp.Body.Close() }()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				Result struct {
					Status    string `json:"status"`
					Operation struct {
						Step    string `json:"step"`
						Percent int    `json:"percent"`
					} `json:"operation"`
				} `json:"result"`
			}
			_ = json.Unmarshal(sc.Bytes(), &m)
			fmt.Fprintf(os.Stderr, "%7.3fs %s %s %d%%\n", time.Since(start).Seconds(), m.Result.Status, m.Result.Operation.Step, m.Result.Operation.Percent)
		}
	}()
	return func() { <-done }
}
