package vcfsm_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/logging"
	compatibility "github.com/vcfsm/vcfsm/services/compatibility/app"
	gateway "github.com/vcfsm/vcfsm/services/gateway/app"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	precheck "github.com/vcfsm/vcfsm/services/precheck/app"
	renderer "github.com/vcfsm/vcfsm/services/renderer/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// The durability goal: the real lifecycle binary is SIGKILLed at every
// step of an upgrade, of a rollback and of a deactivation (before the step acts, and after it
// acted but before that was recorded), restarted on the same data, and the
// operation completes with no resource lost, duplicated or orphaned and
// ownership consistent.
func TestCrashAtEveryStep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts the lifecycle binary many times; run without -short")
	}
	bin := buildLifecycle(t)
	peers := startPeers(t)
	upgrade := []string{"download", "configuration", "compatibility", "precheck-hook", "prechecks", "maintenance", "resources", "cleanup"}
	for _, step := range upgrade {
		for _, when := range []string{"before", "after"} {
			t.Run("upgrade/"+step+":"+when, func(t *testing.T) {
				c := newCrashWorld(t, bin, peers, "")
				id := c.installed(t, c.v1)
				c.restart(t, "upgrade/"+step+":"+when)
				patch(t, c.world, id, `{"source":"`+c.v2+`"`+acceptV2+`}`, http.StatusAccepted)
				c.waitFailpoint(t)
				c.kill(t)
				c.restart(t, "")
				poll(t, "the upgrade to finish after the restart", 90*time.Second, func() svcView { return c.get(t, id) }, func(v svcView) bool {
					return v.Version == "2.0.0" && v.Status == "Healthy"
				})
				c.checkConsistent(t, id, "2.0.0", 4)
			})
		}
	}
	for _, step := range []string{"maintenance", "resources", "cleanup"} {
		for _, when := range []string{"before", "after"} {
			t.Run("rollback/"+step+":"+when, func(t *testing.T) {
				// The RightBundle v2 adds cannot be created: the upgrade
				// is partial and needs a rollback.
				c := newCrashWorld(t, bin, peers, "faults: [{kind: RightBundle, op: apply, effect: fail, message: rights not registered}]\n")
				id := c.installed(t, c.v1)
				patch(t, c.world, id, `{"source":"`+c.v2+`"`+acceptV2+`}`, http.StatusAccepted)
				c.waitStatus(t, id, "Unhealthy")
				c.restart(t, "rollback/"+step+":"+when)
				resp := c.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{})
				require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
				c.waitFailpoint(t)
				c.kill(t)
				c.restart(t, "")
				poll(t, "the rollback to finish after the restart", 90*time.Second, func() svcView { return c.get(t, id) }, func(v svcView) bool {
					return v.Version == "1.0.0" && v.Status == "Healthy"
				})
				c.checkConsistent(t, id, "1.0.0", 5)
			})
		}
	}
	for _, when := range []string{"before", "after"} {
		t.Run("deactivate/remove-resources:"+when, func(t *testing.T) {
			c := newCrashWorld(t, bin, peers, "")
			id := c.installed(t, c.v1)
			c.restart(t, "deactivate/remove-resources:"+when)
			patch(t, c.world, id, `{"lifecycleState":"inactive"}`, http.StatusAccepted)
			c.waitFailpoint(t)
			c.kill(t)
			c.restart(t, "")
			poll(t, "the deactivation to finish after the restart", 90*time.Second, func() svcView { return c.get(t, id) }, func(v svcView) bool {
				return v.LifecycleState == "inactive" && v.Status == "Ready" && v.Phase == ""
			})
			c.checkConsistent(t, id, "1.0.0", 0)
		})
	}
}

// buildLifecycle builds the real lifecycle binary once.
func buildLifecycle(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lifecycle")
	cmd := exec.Command("go", "build", "-o", bin, "../lifecycle/cmd/lifecycle")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "build the lifecycle binary: %s", out)
	return bin
}

// peerServices runs compatibility, renderer and precheck in this process.
type peerServices struct {
	addr string
}

func startPeers(t testing.TB) peerServices {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tokens, err := auth.NewTokens(map[string]string{"e2e": onebox.Token})
	require.NoError(t, err)
	log := logging.Discard()
	comp, err := compatibility.New(ctx, compatibility.Config{}, log)
	require.NoError(t, err)
	rend, err := renderer.New(ctx, renderer.Config{}, log)
	require.NoError(t, err)
	pre, err := precheck.New(ctx, precheck.Config{}, log)
	require.NoError(t, err)
	srv := grpcx.NewServer(grpcx.ServerConfig{Logger: log, Tokens: tokens})
	comp.Register(srv)
	rend.Register(srv)
	pre.Register(srv)
	srv.MarkServing()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, 5*time.Second) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done, "serving the peer services")
		_ = comp.Close()
		_ = rend.Close()
		_ = pre.Close()
	})
	return peerServices{addr: lis.Addr().String()}
}

// crashWorld runs the lifecycle binary as a child process behind an
// in-process gateway.
type crashWorld struct {
	*world
	bin, dataDir, inventory, seed string
	peers                         peerServices
	v1, v2                        string
	lifecycleAddr                 string
	// args are the lifecycle binary's extra flags.
	args     []string
	settings processSettings

	mu       sync.Mutex
	cmd      *exec.Cmd
	logs     []string
	reached  chan struct{}
	gateway  *httptest.Server
	cancelGW context.CancelFunc
}

// processSettings are how a crashWorld runs the lifecycle binary and
// talks to it: the crash tests' fast settings, or the scale benchmark's
// (1,000 Supervisors per step).
type processSettings struct {
	reconcile, stepTimeout time.Duration // --reconcile-interval, --step-timeout
	ready                  time.Duration // how long a restart waits for /readyz
	client                 time.Duration // the REST client's timeout
}

// crashSettings are the crash tests': reconcile every 50 ms.
var crashSettings = processSettings{reconcile: 50 * time.Millisecond, stepTimeout: 60 * time.Second, ready: 30 * time.Second, client: 30 * time.Second}

func newCrashWorld(t testing.TB, bin string, peers peerServices, seed string, args ...string) *crashWorld {
	return newCrashWorldOn(t, bin, peers, inventoryYAML, seed, args...)
}

// newCrashWorldOn is newCrashWorld on an inventory of its own, with v1
// and v2 published and the lifecycle binary started.
func newCrashWorldOn(t testing.TB, bin string, peers peerServices, inventory, seed string, args ...string) *crashWorld {
	t.Helper()
	c := newProcessWorld(t, bin, peers, inventory, seed, crashSettings)
	c.args = args
	c.v1 = c.publish(t, v1)
	c.v2 = c.publish(t, v2)
	c.restart(t, "")
	return c
}

// newProcessWorld is a crashWorld whose lifecycle binary is not started
// yet: its data directory, inventory and seed files, its address, and the
// in-process gateway in front of it.
func newProcessWorld(t testing.TB, bin string, peers peerServices, inventory, seed string, settings processSettings) *crashWorld {
	t.Helper()
	c := &crashWorld{bin: bin, peers: peers, dataDir: t.TempDir(), settings: settings}
	c.world = &world{reg: bundletest.NewRegistry(t), tars: bundletest.NewTarServer(t)}
	c.inventory = filepath.Join(t.TempDir(), "inventory.yaml")
	require.NoError(t, os.WriteFile(c.inventory, []byte(inventory), 0o600))
	c.seed = filepath.Join(t.TempDir(), "seed.yaml")
	require.NoError(t, os.WriteFile(c.seed, []byte(seed), 0o600))
	c.lifecycleAddr = freeAddr(t)

	// The gateway is in-process and stays up across lifecycle restarts.
	ctx, cancel := context.WithCancel(context.Background())
	c.cancelGW = cancel
	conn, err := grpcx.Dial(c.lifecycleAddr, "")
	require.NoError(t, err)
	tokens, err := auth.NewTokens(map[string]string{"e2e": onebox.Token})
	require.NoError(t, err)
	// The tests poll faster than a person would (as onebox's gateway).
	limits := gateway.Limits{RatePerSecond: 1e6, RateBurst: 1e6}
	h, err := gateway.New(ctx, conn, gateway.Options{Logger: logging.Discard(), Tokens: tokens, Limits: limits})
	require.NoError(t, err)
	c.gateway = httptest.NewServer(h)
	c.box = &onebox.Box{URL: c.gateway.URL, Client: &http.Client{Timeout: settings.client}}
	t.Cleanup(func() {
		c.stop(t)
		c.gateway.Close()
		cancel()
		_ = conn.Close()
	})
	return c
}

func freeAddr(t testing.TB) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	return addr
}

// maxLogLines is how many of the lifecycle binary's last log lines a
// crashWorld keeps (to show when a test fails).
const maxLogLines = 10_000

// restart (re)starts the lifecycle binary, with failpoints when given.
func (c *crashWorld) restart(t testing.TB, failpoints string) {
	t.Helper()
	c.stop(t)
	cmd := exec.Command(c.bin, append([]string{
		"--listen", c.lifecycleAddr, "--data-dir", c.dataDir,
		"--compatibility", c.peers.addr, "--renderer", c.peers.addr, "--precheck", c.peers.addr,
		"--tokens", "e2e:" + onebox.Token, "--service-token", onebox.Token,
		"--inventory-file", c.inventory, "--simulator-seed", c.seed,
		"--reconcile-interval", c.settings.reconcile.String(), "--step-timeout", c.settings.stepTimeout.String()}, c.args...)...)
	cmd.Env = append(os.Environ(), "VCFSM_FAILPOINTS="+failpoints, "SSL_CERT_FILE="+c.tars.CA.PEMFile)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	reached := make(chan struct{})
	c.mu.Lock()
	c.cmd, c.reached = cmd, reached
	c.mu.Unlock()
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			c.mu.Lock()
			c.logs = append(c.logs, line)
			if len(c.logs) > maxLogLines {
				c.logs = c.logs[len(c.logs)-maxLogLines:]
			}
			c.mu.Unlock()
			if strings.Contains(line, "failpoint reached") {
				once.Do(func() { close(reached) })
			}
		}
	}()
	poll(t, "the lifecycle binary to serve", c.settings.ready, func() int {
		resp, err := c.box.Client.Get(c.box.URL + "/readyz")
		if err != nil {
			return 0
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}, func(s int) bool { return s == http.StatusOK })
}

func (c *crashWorld) waitFailpoint(t testing.TB) {
	t.Helper()
	select {
	case <-c.reached:
	case <-time.After(90 * time.Second):
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("the failpoint was not reached; logs:\n%s", strings.Join(c.logs, "\n"))
	}
}

func (c *crashWorld) kill(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	cmd := c.cmd
	c.cmd = nil
	c.mu.Unlock()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
}

func (c *crashWorld) stop(t testing.TB) {
	c.mu.Lock()
	cmd := c.cmd
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (c *crashWorld) installed(t testing.TB, source string) string {
	t.Helper()
	id := c.create(t, source)
	c.waitStatus(t, id, "Unresolved")
	c.activate(t, id)
	v := c.waitStatus(t, id, "Healthy", "Unhealthy")
	require.Equal(t, "Healthy", v.Status, "%+v", v.State)
	return id
}

// checkConsistent compares the lifecycle service's records with the
// simulated targets: the same resources, each once, all owned by version.
func (c *crashWorld) checkConsistent(t testing.TB, id, version string, want int) {
	t.Helper()
	v := c.get(t, id)
	records := map[string]bool{}
	for _, r := range v.State.Resources {
		require.Equal(t, version, r.OwnerVersion, "%s %s", r.Type, r.Name)
		require.Equal(t, "Healthy", r.Status, "%s %s: %s", r.Type, r.Name, r.Message)
		records[r.Type+"/"+r.Name+"/"+r.Supervisor] = true
	}
	require.Len(t, records, want, "%v", records)
	c.stop(t)
	sim, err := simulator.Open(simulator.Config{Path: filepath.Join(c.dataDir, "simulated-targets.db")})
	require.NoError(t, err)
	defer func() { _ = sim.Close() }()
	objs, err := sim.List(context.Background(), "")
	require.NoError(t, err)
	owned := 0
	seen := map[string]bool{}
	for _, o := range objs {
		require.False(t, seen[o.String()], "duplicate %s", o.Key)
		seen[o.String()] = true
		require.Equal(t, id, o.Owner.ServiceID, "orphaned target resource %s", o.Key)
		require.Equal(t, version, o.Owner.Version, "%s owned by %s", o.Key, o.Owner.Version)
		require.Equal(t, []string{"services.vcfa.broadcom.com/cleanup"}, o.Finalizers, "%s", o.Key)
		owned++
	}
	require.Equal(t, want, owned, "every record has exactly one target resource")
}
