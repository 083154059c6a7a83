package vcfsm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// The issue-26 rollout benchmarks run on the simulator, which answers at
// once: they measure the rollout's orchestration (gates, journaling,
// reads of the targets), not the targets. Soak times are zero; the
// rollout looks at its targets at the product's default (every second).

// threeWaves1000 is the strategy over scaleInventory(100, 10): the 10
// Supervisors of region-00, the 100 of region-01..10, then the rest.
func threeWaves1000() string {
	var early []string
	for i := 1; i <= 10; i++ {
		early = append(early, fmt.Sprintf("%q", fmt.Sprintf("region-%02d", i)))
	}
	return `{"waves":[{"name":"canary","regions":["region-00"]},{"name":"early","regions":[` + strings.Join(early, ",") + `]},{"name":"rest","rest":true}]}`
}

// secondWaveTarget is the n-th Supervisor (from 1) of the second wave, in
// the order the rollout lists them (by name).
func secondWaveTarget(n int) string {
	var names []string
	for i := 10; i < 110; i++ {
		names = append(names, fmt.Sprintf("sv-%02d", i))
	}
	sort.Strings(names)
	return names[n-1]
}

// activated creates and activates the scale service at sources[0].
func (w *scaleWorld) activated(b *testing.B) string {
	id := w.create(b, w.sources[0])
	w.waitStatus(b, id, "Unresolved")
	w.activate(b, id)
	if v := w.waitStatus(b, id, "Healthy", "Unhealthy"); v.Status != "Healthy" {
		b.Fatalf("activation: %+v", v.State.ErrorDetails)
	}
	return id
}

// upgradeInWaves PATCHes the service to source with the strategy.
func upgradeInWaves(b testing.TB, w *world, id, source, strategy string) {
	resp := w.box.Do(b, http.MethodPatch, "/v2/vcf-services/"+id, []byte(`{"source":"`+source+`","rollout":{"strategy":`+strategy+`}}`))
	require.Equal(b, http.StatusAccepted, resp.Status, "%s", resp.Body)
}

// 1,000 Supervisors, 5,000 resources (issue 17's fleet and upgrade),
// three waves of 10, 100 and the rest 890: from the PATCH to Healthy at
// 2.0.0, and the process's peak RSS.
func BenchmarkRollout1000(b *testing.B) {
	w := newScaleWorld(b, 100, 10, scaleUpgrade5000...)
	var total, cpu time.Duration
	for range b.N {
		id := w.activated(b)
		stopProfile := profileWindow(b, "rollout1000")
		start, cpu0 := time.Now(), cpuTime(b)
		upgradeInWaves(b, w.world, id, w.sources[1], threeWaves1000())
		w.waitCount(b, "version==2.0.0;status==Healthy", 1)
		total += time.Since(start)
		cpu += cpuTime(b) - cpu0
		stopProfile()
		r := w.rollout(b, id)
		require.Equal(b, "Succeeded", r.State)
		require.Len(b, r.Targets, 1000)
		logSteps(b, w.box, id)
		w.remove(b, id)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-healthy")
	// The CPU the whole process used meanwhile (every service, the
	// simulated targets, the benchmark's own polling): less sensitive to
	// the machine's load than the wall time.
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s")
	b.ReportMetric(peakRSS(b), "MiB-peak-rss")
}

// The same rollout with the second wave's 5th Supervisor failing (its
// registries turn Unhealthy when applied): the 110 Supervisors moved (10
// + 100) are rolled back, wave 2 then wave 1. s-to-rolled-back runs from
// the turn to the rollback (the watch shows the first rollback-wave step)
// to the rollout's end (every target Healthy on 1.0.0 again); s-total from
// the PATCH to the service Healthy on 1.0.0 again.
func BenchmarkRolloutRollback(b *testing.B) {
	w := newScaleWorld(b, 100, 10, scaleUpgrade5000...)
	var back, total, cpu time.Duration
	for range b.N {
		id := w.activated(b)
		require.NoError(b, w.sim.InjectFault(simulator.Fault{Scope: secondWaveTarget(5), Kind: "SupervisorRegistry", Op: "apply", Effect: simulator.EffectUnhealthy, Times: 1}))
		stopProfile := profileWindow(b, "rollout-rollback")
		turns := watchTurns(b, w.world, id)
		start, cpu0 := time.Now(), cpuTime(b)
		upgradeInWaves(b, w.world, id, w.sources[1], threeWaves1000())
		w.waitCount(b, "rollout.state==RolledBack;status==Healthy;version==1.0.0", 1)
		total += time.Since(start)
		cpu += cpuTime(b) - cpu0
		stopProfile()
		r := w.rollout(b, id)
		require.Equal(b, "RolledBack", r.State, "%s", r.Reason)
		require.Contains(b, r.Reason, secondWaveTarget(5))
		rolledBack := 0
		for _, t := range r.Targets {
			if t.State == "RolledBack" {
				rolledBack++
			}
			require.Equal(b, "1.0.0", t.Version, t.Supervisor)
		}
		require.Equal(b, 110, rolledBack, "the two waves moved")
		back += turns.rollback(b)
		logSteps(b, w.box, id)
		w.remove(b, id)
		w.sim.ClearFaults()
	}
	b.ReportMetric(back.Seconds()/float64(b.N), "s-to-rolled-back")
	b.ReportMetric(total.Seconds()/float64(b.N), "s-total")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s")
	b.ReportMetric(peakRSS(b), "MiB-peak-rss")
}

// waitCount polls a FIQL list (cheap, unlike a GET of a service with
// thousands of resources; a watch outlives the test client's timeout)
// until n services match.
func (w *world) waitCount(b testing.TB, filter string, n int) {
	poll(b, filter, 10*time.Minute, func() int { return w.countWhere(b, filter) }, func(got int) bool { return got == n })
}

// rolloutTurns records when the service's watch stream first showed its
// rollout's first rollback step and then the rollout's end: the events'
// arrival times, a few milliseconds late at most (the history's times are
// whole seconds).
type rolloutTurns struct {
	mu         sync.Mutex
	back, done time.Time
	stop       func()
}

// watchTurns opens a watch on the service (closed by rollback).
func watchTurns(b testing.TB, w *world, id string) *rolloutTurns {
	ctx, cancel := context.WithCancel(context.Background())
	t := &rolloutTurns{stop: cancel}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.box.URL+"/v2/vcf-services/"+id+"/watch", nil)
	require.NoError(b, err)
	req.Header.Set("Authorization", "Bearer "+onebox.Token)
	resp, err := (&http.Client{}).Do(req) //nolint:bodyclose // closed by the goroutine below
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode)
	go func() {
		defer func() { _ = resp.Body.Close() }()
		dec := json.NewDecoder(resp.Body)
		for {
			var m struct {
				Result struct {
					Operation struct {
						Type    string `json:"type"`
						Step    string `json:"step"`
						Outcome string `json:"outcome"`
					} `json:"operation"`
				} `json:"result"`
			}
			if dec.Decode(&m) != nil {
				return
			}
			now, op := time.Now(), m.Result.Operation
			t.mu.Lock()
			switch {
			case op.Type != "rollout":
			case strings.HasPrefix(op.Step, "rollback-wave-") && t.back.IsZero():
				t.back = now
			case op.Outcome != "" && t.done.IsZero():
				t.done = now
			}
			t.mu.Unlock()
		}
	}()
	return t
}

// rollback is the time from the turn to the rollback to its end; it
// closes the watch.
func (t *rolloutTurns) rollback(b testing.TB) time.Duration {
	poll(b, "the watch seeing the rollout rolled back", time.Minute, func() bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		return !t.done.IsZero()
	}, func(done bool) bool { return done })
	t.stop()
	t.mu.Lock()
	defer t.mu.Unlock()
	require.False(b, t.back.IsZero(), "the watch saw the rollout rolling back")
	return t.done.Sub(t.back)
}

// registriesServer renders only SupervisorRegistries, one per Supervisor
// of every region, their endpoints in the service's own domain: many
// services may run on the same Supervisors side by side.
const registriesServer = `#@ load("@ytt:data", "data")

#@ def singleton():
#@   return []
#@ end

#@ def server(region):
#@   docs = []
#@   for sv in region["clientSupervisors"]:
#@     docs.append({
#@       "apiVersion": "services.vcfa.broadcom.com/v2",
#@       "kind": "SupervisorRegistry",
#@       "metadata": {"labels": {"services.vcfa.broadcom.com/name": "registry"}},
#@       "spec": {"region": region["name"], "supervisor": sv,
#@                "endpoint": "registry.%[1]s.example.com:5000", "username": "%[2]s"},
#@     })
#@   end
#@   return docs
#@ end
`

// publishFleet publishes n packages (fleet-NN.example.com) in 1.0.0 and
// 2.0.0 (a new username on every registry), returning their sources.
func publishFleet(b testing.TB, w *world, n int) [][2]string {
	out := make([][2]string, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var srcs [2]string
			for j, user := range []string{"admin", "operator"} {
				v := arcturusVersion{Version: fmt.Sprintf("%d.0.0", j+1)}
				spec := v.spec()
				spec.Name = fmt.Sprintf("fleet-%02d.example.com", i)
				spec.ConfigFiles["server.lib.yml"] = fmt.Sprintf(registriesServer, fmt.Sprintf("fleet-%02d", i), user)
				ref := fmt.Sprintf("fleet-%02d:%s", i, v.Version)
				bundletest.PushBundle(b, w.reg, bundletest.NewBundleDir(b, spec), ref)
				tar := fmt.Sprintf("fleet-%02d-%s.tar", i, v.Version)
				w.tars.Add(tar, bundletest.CopyToTar(b, w.reg, w.reg.Ref(ref)))
				srcs[j] = w.tars.URL(tar)
			}
			mu.Lock()
			out[i] = srcs
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// 100 services, each on the same 100 Supervisors (10 regions of 10), all
// rolled out at once in two waves (region-00, then the rest): from the
// first PATCH to the last service Healthy at 2.0.0.
func BenchmarkRollouts100(b *testing.B) {
	const services = 100
	w := newScaleWorld(b, 10, 10)
	fleet := publishFleet(b, w.world, services)
	strategy := `{"waves":[{"name":"canary","regions":["region-00"]},{"name":"rest","rest":true}]}`
	var total, cpu time.Duration
	for n := range b.N {
		ids := make([]string, services)
		for i := range services {
			ids[i] = w.create(b, fleet[i][0])
		}
		for _, id := range ids {
			w.waitStatus(b, id, "Unresolved")
			w.activate(b, id)
		}
		for _, id := range ids {
			if v := w.waitStatus(b, id, "Healthy", "Unhealthy"); v.Status != "Healthy" {
				b.Fatalf("activation of %s: %+v", id, v.State.ErrorDetails)
			}
		}
		stopProfile := profileWindow(b, "rollouts100")
		start, cpu0 := time.Now(), cpuTime(b)
		for i, id := range ids {
			upgradeInWaves(b, w.world, id, fleet[i][1], strategy)
		}
		w.waitCount(b, "version==2.0.0;status==Healthy", services)
		total += time.Since(start)
		cpu += cpuTime(b) - cpu0
		stopProfile()
		for _, id := range ids {
			require.Equal(b, "Succeeded", w.rollout(b, id).State)
		}
		if n < b.N-1 {
			for _, id := range ids {
				w.remove(b, id)
			}
		}
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s-to-healthy")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s")
	b.ReportMetric(peakRSS(b), "MiB-peak-rss")
}

// countWhere counts the services a FIQL filter matches.
func (w *world) countWhere(tb testing.TB, filter string) int {
	resp := w.box.Do(tb, http.MethodGet, "/v2/vcf-services?page=1&pageSize=1&filter="+url.QueryEscape(filter), nil)
	require.Equal(tb, http.StatusOK, resp.Status, "%s", resp.Body)
	var l struct {
		ResultTotal int `json:"resultTotal"`
	}
	require.NoError(tb, json.Unmarshal(resp.Body, &l))
	return l.ResultTotal
}
