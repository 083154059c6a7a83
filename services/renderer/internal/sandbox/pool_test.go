package sandbox

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vcfsm/vcfsm/services/renderer/internal/rendertest"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
)

// TestMain lets the test binary serve as the pool's worker executable.
func TestMain(m *testing.M) {
	MaybeRunWorker()
	os.Exit(m.Run())
}

const testdata = "../../testdata"

func loadBundle(t testing.TB, name string) *commonv1.Bundle {
	t.Helper()
	return rendertest.LoadBundle(t, filepath.Join(testdata, "bundles", name), "sha256:test-"+name)
}

func inventory(t testing.TB) *commonv1.Inventory {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdata, "inventories", "multi-region.json"))
	require.NoError(t, err)
	inv := &commonv1.Inventory{}
	require.NoError(t, protojson.Unmarshal(data, inv))
	return inv
}

func newPool(t testing.TB, cfg Config) *Pool {
	t.Helper()
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second
	}
	if cfg.MemoryLimit == 0 {
		cfg.MemoryLimit = 512 << 20
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = 4
	}
	p, err := New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

func resourcesRequest(t testing.TB) *rendererv1.RenderResourcesRequest {
	return &rendererv1.RenderResourcesRequest{
		Bundle: loadBundle(t, "arcturus"),
		Values: &rendererv1.ValueLayers{Inventory: inventory(t)},
	}
}

// renderOK checks that the pool serves a normal render.
func renderOK(t *testing.T, p *Pool) {
	t.Helper()
	resp, err := p.RenderResources(context.Background(), resourcesRequest(t))
	require.NoError(t, err)
	require.NotEmpty(t, resp.GetResources())
}

func TestPoolRendersLikeTheEngine(t *testing.T) {
	p := newPool(t, Config{Workers: 2, IsolateNetwork: true})
	engine, err := render.NewEngine(4)
	require.NoError(t, err)
	ctx := context.Background()

	want, err := engine.RenderResources(ctx, resourcesRequest(t))
	require.NoError(t, err)
	got, err := p.RenderResources(ctx, resourcesRequest(t))
	require.NoError(t, err)
	require.True(t, proto.Equal(want, got), "pool and engine disagree")

	evReq := &rendererv1.RenderEffectiveValuesRequest{Bundle: loadBundle(t, "arcturus"), Values: &rendererv1.ValueLayers{Inventory: inventory(t)}, Expanded: true, Provenance: true}
	wantEV, err := engine.RenderEffectiveValues(ctx, evReq)
	require.NoError(t, err)
	gotEV, err := p.RenderEffectiveValues(ctx, evReq)
	require.NoError(t, err)
	require.True(t, proto.Equal(wantEV, gotEV))

	agReq := &rendererv1.RenderAccessGrantsRequest{Bundle: loadBundle(t, "arcturus"), Values: &rendererv1.ValueLayers{Inventory: inventory(t)}}
	wantAG, err := engine.RenderAccessGrants(ctx, agReq)
	require.NoError(t, err)
	gotAG, err := p.RenderAccessGrants(ctx, agReq)
	require.NoError(t, err)
	require.True(t, proto.Equal(wantAG, gotAG))
}

func TestPoolKeepsDomainErrors(t *testing.T) {
	p := newPool(t, Config{})
	req := resourcesRequest(t)
	req.Values.UserOverwrite = "%%%"
	_, err := p.RenderResources(context.Background(), req)
	require.ErrorIs(t, err, render.ErrInvalidInput)
	var re *render.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, render.LayerUserOverwrite, re.Layer)
	require.Contains(t, err.Error(), "userOverwrite: invalid base64")
}

func TestLoopingTemplateIsStoppedAtItsBound(t *testing.T) {
	const bound = 750 * time.Millisecond
	p := newPool(t, Config{Timeout: bound})
	req := &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, "looping")}

	start := time.Now()
	_, err := p.RenderResources(context.Background(), req)
	elapsed := time.Since(start)
	require.ErrorIs(t, err, ErrTimeLimit)
	require.Contains(t, err.Error(), "ran longer than 750ms (--render-timeout)")
	require.GreaterOrEqual(t, elapsed, bound)
	require.Less(t, elapsed, bound+5*time.Second, "the render was not stopped at its bound")

	// The single worker was replaced: the service keeps serving.
	renderOK(t, p)
}

func TestMemoryHungryTemplateIsStopped(t *testing.T) {
	p := newPool(t, Config{MemoryLimit: 128 << 20, Timeout: time.Minute})
	_, err := p.RenderResources(context.Background(), &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, "memory-hog")})
	require.ErrorIs(t, err, ErrMemoryLimit)
	require.Contains(t, err.Error(), "more than the 128 MiB allowed (--render-memory-limit)")
	renderOK(t, p)
}

func TestOverlayPastItsBoundMakesTheTargetUnhealthy(t *testing.T) {
	p := newPool(t, Config{Timeout: 500 * time.Millisecond})
	resp, err := p.ApplyOverlay(context.Background(), &rendererv1.ApplyOverlayRequest{
		RuntimeSpecYaml: []byte("values: {}\n"),
		Overlay:         "#@ def spin():\n#@   for i in range(100000000):\n#@     for j in range(100000000):\n#@       i + j\n#@     end\n#@   end\n#@ end\n--- #@ spin()\n",
		OverlayReady:    true,
		OverlayName:     "install.us-west-1",
	})
	require.NoError(t, err)
	require.Equal(t, render.StatusUnhealthy, resp.GetStatus())
	require.True(t, strings.HasPrefix(resp.GetMessage(), "Failed to apply overlay: ytt transformation failed: render time limit exceeded"), resp.GetMessage())
	renderOK(t, p)
}

func TestCancelledCallStopsItsWorker(t *testing.T) {
	p := newPool(t, Config{Timeout: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, "looping")})
		errc <- err
	}()
	waitBusy(t, p)
	cancel()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled render did not return")
	}
	renderOK(t, p)
}

func TestCrashedWorkerIsReplaced(t *testing.T) {
	p := newPool(t, Config{Timeout: time.Minute})
	errc := make(chan error, 1)
	go func() {
		_, err := p.RenderResources(context.Background(), &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, "looping")})
		errc <- err
	}()
	w := waitBusy(t, p)
	require.NoError(t, syscall.Kill(w.pid, syscall.SIGKILL))
	select {
	case err := <-errc:
		require.ErrorIs(t, err, ErrWorkerCrashed)
		require.Contains(t, err.Error(), "a new worker replaces it")
	case <-time.After(10 * time.Second):
		t.Fatal("the render of a killed worker did not return")
	}
	renderOK(t, p)
}

// waitBusy polls until the only worker of p has taken a request and
// returns it.
func waitBusy(t *testing.T, p *Pool) *worker {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if len(p.idle) == 0 {
			p.mu.Lock()
			for w := range p.live {
				p.mu.Unlock()
				return w
			}
			p.mu.Unlock()
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatal("no worker became busy")
		}
	}
}

func TestDigestOnlyRequests(t *testing.T) {
	p := newPool(t, Config{Workers: 2})
	ctx := context.Background()
	renderOK(t, p)

	// Cached: the digest is enough, on any worker.
	for i := 0; i < 4; i++ {
		req := resourcesRequest(t)
		req.Bundle = &commonv1.Bundle{Digest: req.GetBundle().GetDigest()}
		resp, err := p.RenderResources(ctx, req)
		require.NoError(t, err)
		require.NotEmpty(t, resp.GetResources())
	}

	_, err := p.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: &commonv1.Bundle{Digest: "sha256:unknown"}})
	require.ErrorIs(t, err, render.ErrBundleNotCached)
	require.Contains(t, err.Error(), "bundle sha256:unknown is not cached by the renderer: resend the request with the bundle's files")
}

func TestWorkerThatLostABundleGetsTheFilesAgain(t *testing.T) {
	p := newPool(t, Config{})
	req := resourcesRequest(t)
	// Make the pool believe its worker parsed the bundle already: the
	// worker answers "not cached" and the pool resends the files.
	w := <-p.idle
	w.known.Add(req.GetBundle().GetDigest(), struct{}{})
	p.idle <- w
	resp, err := p.RenderResources(context.Background(), req)
	require.NoError(t, err)
	require.NotEmpty(t, resp.GetResources())
}

func TestWorkersGetAMinimalEnvironmentAndTheirOwnNetwork(t *testing.T) {
	t.Setenv("VCFSM_TOKENS", "admin:secret-token")
	p := newPool(t, Config{IsolateNetwork: true})
	w := <-p.idle
	defer func() { p.idle <- w }()

	environ, err := os.ReadFile("/proc/" + strconv.Itoa(w.pid) + "/environ")
	require.NoError(t, err)
	vars := strings.Split(strings.TrimRight(string(environ), "\x00"), "\x00")
	require.ElementsMatch(t, []string{workerEnv + "=1", workerCacheEnv + "=4", "GOMEMLIMIT=" + strconv.Itoa(512<<20/10*9), "GOGC=200"}, vars)
	require.False(t, bytes.Contains(environ, []byte("secret-token")))

	t.Logf("network isolation: %v", p.isolate.Load())
	if p.isolate.Load() {
		own, err := os.Readlink("/proc/self/ns/net")
		require.NoError(t, err)
		theirs, err := os.Readlink("/proc/" + strconv.Itoa(w.pid) + "/ns/net")
		require.NoError(t, err)
		require.NotEqual(t, own, theirs, "the worker shares the renderer's network namespace")
	}
}

func TestStartFailsClearlyWithoutTheHook(t *testing.T) {
	_, err := New(Config{Workers: 1, Timeout: time.Second, MemoryLimit: 64 << 20, CacheSize: 1, Executable: "/bin/true"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "must call the renderer's MaybeRunWorker hook (renderer app.MaybeRunWorker()) first thing in main, and a test binary in TestMain")
}

func TestConfigIsChecked(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no workers", Config{Workers: 0, Timeout: time.Second, MemoryLimit: 64 << 20, CacheSize: 1}, "need at least 1"},
		{"no timeout", Config{Workers: 1, MemoryLimit: 64 << 20, CacheSize: 1}, "timeout must be positive"},
		{"tiny memory", Config{Workers: 1, Timeout: time.Second, MemoryLimit: 1 << 20, CacheSize: 1}, "at least 32 MiB"},
		{"no cache", Config{Workers: 1, Timeout: time.Second, MemoryLimit: 64 << 20}, "cache size must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestClosedPoolRefusesWork(t *testing.T) {
	p, err := New(Config{Workers: 2, Timeout: time.Second, MemoryLimit: 64 << 20, CacheSize: 1})
	require.NoError(t, err)
	var pids []int
	p.mu.Lock()
	for w := range p.live {
		pids = append(pids, w.pid)
	}
	p.mu.Unlock()
	require.NoError(t, p.Close())
	_, err = p.RenderResources(context.Background(), resourcesRequest(t))
	require.ErrorIs(t, err, ErrClosed)
	for _, pid := range pids {
		// Reaped processes are gone: signal 0 fails.
		require.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "worker %d still exists", pid)
	}
}

func TestBundleWithoutRenderableFilesIsReported(t *testing.T) {
	p := newPool(t, Config{})
	_, err := p.RenderResources(context.Background(), &rendererv1.RenderResourcesRequest{Bundle: &commonv1.Bundle{
		Digest: "sha256:readme-only",
		Files:  []*commonv1.BundleFile{{Path: "README.md", Content: []byte("hello")}},
	}})
	require.ErrorIs(t, err, render.ErrInvalidInput)
	require.Equal(t, "bundle: package.yml: missing: every bundle has package.yml at its root", err.Error())
}
