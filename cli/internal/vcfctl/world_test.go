package vcfctl_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	renderer "github.com/vcfsm/vcfsm/services/renderer/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"

	"github.com/vcfsm/vcfsm/cli/internal/vcfctl"
)

// runAsCLI, set in the environment, makes this test binary run as vcfctl
// itself: the completion test calls it from bash as "vcfctl".
const runAsCLI = "VCFCTL_TEST_RUN_AS_CLI"

// TestMain lets this test binary serve as the renderer's sandbox worker
// (the onebox's renderer re-executes its own executable to render) and as
// vcfctl for shells.
func TestMain(m *testing.M) {
	renderer.MaybeRunWorker()
	if os.Getenv(runAsCLI) == "1" {
		os.Exit(vcfctl.Run(context.Background(), os.Args[1:], vcfctl.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv))
	}
	os.Exit(m.Run())
}

// world is a running all-in-one with a registry, a tarball server, a
// pre-check hook and a vcfctl configuration directory.
type world struct {
	box  *onebox.Box
	reg  *bundletest.Registry
	tars *bundletest.TarServer
	hook *hookServer
	env  map[string]string
	tmp  string
}

func newWorld(t *testing.T, opts ...onebox.Option) *world {
	t.Helper()
	w := &world{reg: bundletest.NewRegistry(t), tars: bundletest.NewTarServer(t), hook: newHook(t), tmp: t.TempDir()}
	inv := filepath.Join(w.tmp, "inventory.yaml")
	require.NoError(t, os.WriteFile(inv, []byte(inventoryYAML), 0o600))
	w.box = onebox.Start(t, func(c *app.Config) {
		c.Lifecycle.SourceRootCAs = w.tars.RootCAs()
		c.Lifecycle.InventoryFile = inv
		c.Lifecycle.ReconcileInterval = 50 * time.Millisecond
		c.Lifecycle.StepTimeout = 30 * time.Second
		c.Precheck.Resolve = []string{hookHost + "=" + w.hook.Listener.Addr().String()}
		for _, o := range opts {
			o(c)
		}
	})
	w.env = map[string]string{"XDG_CONFIG_HOME": filepath.Join(w.tmp, "config"), "HOME": w.tmp}
	return w
}

// result is one vcfctl run.
type result struct {
	code        int
	out, errOut string
}

// run executes vcfctl in-process with the world's environment.
func (w *world) run(t *testing.T, args ...string) result {
	t.Helper()
	return w.runIO(t, nil, args...)
}

func (w *world) runIO(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	code := vcfctl.Run(ctx, args, vcfctl.IO{In: stdin, Out: &out, Err: &errOut}, w.getenv)
	return result{code: code, out: out.String(), errOut: errOut.String()}
}

func (w *world) getenv(k string) string { return w.env[k] }

// ok runs vcfctl and requires exit 0.
func (w *world) ok(t *testing.T, args ...string) string {
	t.Helper()
	r := w.run(t, args...)
	require.Equal(t, 0, r.code, "vcfctl %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.out, r.errOut)
	return r.out
}

// login saves a context for the box.
func (w *world) login(t *testing.T) {
	t.Helper()
	tokenFile := filepath.Join(w.tmp, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(onebox.Token+"\n"), 0o600))
	w.ok(t, "login", "--server", w.box.URL, "--token-file", tokenFile, "--context", "box")
}

// publish builds a version's bundle, pushes it and offers it as a
// tarball; it returns the tarball URL.
func (w *world) publish(t *testing.T, v arcturusVersion) string {
	t.Helper()
	name, tar := w.tarball(t, v)
	w.tars.Add(name, tar)
	return w.tars.URL(name)
}

// tarball builds a version's bundle tarball and returns its name and path.
func (w *world) tarball(t *testing.T, v arcturusVersion) (string, string) {
	t.Helper()
	spec := v.spec()
	// Each package installs its own SupervisorService package (refName),
	// so two services never claim the same object on a Supervisor.
	ssName := v.repo() + "-registry.example.com"
	ssImage := bundletest.PushSupervisorServiceBundle(t, w.reg, v.repo()+"-registry:"+v.SSVersion, ssName, v.SSVersion)
	spec.Images = append(spec.Images, bundletest.BundleImage{Image: ssImage})
	spec.SystemValues = map[string]any{"supervisorService": bundletest.SupervisorServiceValues(ssImage, ssName, v.SSVersion)}
	dir := bundletest.NewBundleDir(t, spec)
	ref := v.repo() + "-bundle:" + v.Version
	bundletest.PushBundle(t, w.reg, dir, ref)
	return v.repo() + "-" + v.Version + ".tar", bundletest.CopyToTar(t, w.reg, w.reg.Ref(ref))
}

// hookServer is a real pre-check hook whose answer a test sets.
type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	body   string
}

func newHook(t *testing.T) *hookServer {
	t.Helper()
	h := &hookServer{status: http.StatusOK, body: `{"results":[{"severity":"INFO","message":"storage is ready"}]}`}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h.mu.Lock()
		status, body := h.status, h.body
		h.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) answer(status int, body string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.status, h.body = status, body
}

// hookHost is where the fixture's hook annotations point.
const hookHost = "arcturus-hook.svc-arcturus-galaxy-com.svc.cluster.local"

var hookAnnotations = map[string]string{
	"appplatform.vmware.com/compatibility-check_service": "arcturus-hook",
	"appplatform.vmware.com/compatibility-check_url":     "precheck/v1",
	"appplatform.vmware.com/compatibility-check_method":  "POST",
}

// Versions of the fixture: v2 changes the GlobalRole's rights
// (reconfigured), drops the service account (decommissioned), adds a right
// bundle (created) and keeps the SupervisorServices (unchanged).
var (
	v1 = arcturusVersion{Version: "1.0.0", SSVersion: "1.0.0", Rights: []string{"RIGHT_ORGANIZATION_VIEW"}, ServiceAccount: true, Annotations: hookAnnotations}
	v2 = arcturusVersion{Version: "2.0.0", SSVersion: "1.0.0", Rights: []string{"RIGHT_ORGANIZATION_VIEW", "RIGHT_ORG_TRAVERSE"}, RightBundle: true, Annotations: hookAnnotations}
	v3 = arcturusVersion{Version: "3.0.0", SSVersion: "1.0.0", Rights: []string{"RIGHT_ORGANIZATION_VIEW"}, RightBundle: true, Annotations: hookAnnotations}
)
