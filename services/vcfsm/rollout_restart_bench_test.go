package vcfsm_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/logging"
	gateway "github.com/vcfsm/vcfsm/services/gateway/app"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
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
		c.start(b, "rollout/wave-3:before")
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
		c.start(b, "")
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

// newScaleProcess is a crashWorld over the scale inventory (100 regions
// of 10 Supervisors) whose lifecycle binary runs with the scale
// benchmarks' settings; start starts it.
func newScaleProcess(b testing.TB, bin string, peers peerServices) *crashWorld {
	c := &crashWorld{bin: bin, peers: peers, dataDir: b.TempDir()}
	c.world = &world{reg: bundletest.NewRegistry(b), tars: bundletest.NewTarServer(b)}
	c.inventory = filepath.Join(b.TempDir(), "inventory.yaml")
	require.NoError(b, os.WriteFile(c.inventory, []byte(scaleInventory(100, 10)), 0o600))
	c.seed = filepath.Join(b.TempDir(), "seed.yaml")
	require.NoError(b, os.WriteFile(c.seed, nil, 0o600))
	c.lifecycleAddr = freeAddr(b)
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := grpcx.Dial(c.lifecycleAddr, "")
	require.NoError(b, err)
	tokens, err := auth.NewTokens(map[string]string{"e2e": onebox.Token})
	require.NoError(b, err)
	h, err := gateway.New(ctx, conn, gateway.Options{Logger: logging.Discard(), Tokens: tokens})
	require.NoError(b, err)
	c.gateway = httptest.NewServer(h)
	c.box = &onebox.Box{URL: c.gateway.URL, Client: &http.Client{Timeout: 60 * time.Second}}
	b.Cleanup(func() {
		c.stop(b)
		c.gateway.Close()
		cancel()
		_ = conn.Close()
	})
	return c
}

// start starts the lifecycle binary (stopping a running one first).
func (c *crashWorld) start(b testing.TB, failpoints string) {
	c.stop(b)
	cmd := exec.Command(c.bin,
		"--listen", c.lifecycleAddr, "--data-dir", c.dataDir,
		"--compatibility", c.peers.addr, "--renderer", c.peers.addr, "--precheck", c.peers.addr,
		"--tokens", "e2e:"+onebox.Token, "--service-token", onebox.Token,
		"--inventory-file", c.inventory, "--simulator-seed", c.seed,
		"--reconcile-interval", "1s", "--step-timeout", "5m")
	cmd.Env = append(os.Environ(), "VCFSM_FAILPOINTS="+failpoints, "SSL_CERT_FILE="+c.tars.CA.PEMFile)
	stderr, err := cmd.StderrPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	reached := make(chan struct{})
	c.mu.Lock()
	c.cmd, c.reached, c.logs = cmd, reached, nil
	c.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			if len(c.logs) < 10_000 {
				c.logs = append(c.logs, line)
			}
			c.mu.Unlock()
			if strings.Contains(line, "failpoint reached") {
				once.Do(func() { close(reached) })
			}
		}
	}()
	poll(b, "the lifecycle binary to serve", time.Minute, func() int {
		resp, err := c.box.Client.Get(c.box.URL + "/readyz")
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}, func(s int) bool { return s == http.StatusOK })
}
