package depot

import (
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
)

// fixture is a realistic signed bundle: the example bundle with a zipped UI
// plugin image and a SupervisorService bundle in its images.yml, pushed to
// an in-process registry with imgpkg, signed, copied to a tarball with
// imgpkg copy --to-tar --cosign-signatures and served over HTTPS.
type fixture struct {
	reg        *bundletest.Registry
	srv        *bundletest.TarServer
	dir        string // the bundle source tree
	digest     string // bundle digest
	repoTag    string
	pluginRef  string
	ssvcRef    string
	manifest   []byte // the UI plugin manifest.json
	sigPayload []byte
	tarPath    string
	tarURL     string
}

const (
	fixtureRepo = "myservice"
	fixtureTag  = "myservice:1.2.3"
)

func newFixture(t testing.TB) *fixture { return newFixtureWithAssets(t, 0) }

// newFixtureWithAssets makes the UI plugin carry pluginAssets bytes of
// incompressible payload (realistic tarball sizes for benchmarks).
func newFixtureWithAssets(t testing.TB, pluginAssets int) *fixture {
	t.Helper()
	fx := &fixture{reg: bundletest.NewRegistry(t), srv: bundletest.NewTarServer(t), repoTag: fixtureTag}
	fx.manifest = bundletest.PluginManifest("myservice-plugin", "1.2.3")
	fx.pluginRef = bundletest.PushImage(t, fx.reg, "myservice-ui:1.2.3", bundletest.PluginImageWithAssets(t, fx.manifest, true, pluginAssets))
	fx.ssvcRef = bundletest.PushSupervisorServiceBundle(t, fx.reg, "my-supervisor-svc:1.2.3", "my-supervisor-svc.example.com", "1.2.3")
	fx.dir = bundletest.NewBundleDir(t, bundletest.BundleSpec{
		Version:                      "1.2.3",
		Annotations:                  map[string]string{"precheck.vcfsm.io/_service": "myservice-precheck"},
		KubernetesVersionConstraints: ">=1.29.0",
		Images: []bundletest.BundleImage{
			{Image: fx.pluginRef, SystemKey: "uiplugin1", Annotations: map[string]string{"kbld.carvel.dev/id": "myservice-ui"}},
			{Image: fx.ssvcRef, Annotations: map[string]string{"kbld.carvel.dev/id": "my-supervisor-svc"}},
		},
		SystemValues: map[string]any{"supervisorService": bundletest.SupervisorServiceValues(fx.ssvcRef, "my-supervisor-svc.example.com", "1.2.3")},
	})
	fx.digest = bundletest.PushBundle(t, fx.reg, fx.dir, fx.repoTag)
	fx.sigPayload = bundletest.Sign(t, fx.reg, fixtureRepo, fx.digest)
	fx.tarPath = bundletest.CopyToTar(t, fx.reg, fx.reg.Ref(fx.repoTag))
	fx.tarURL = bundletest.TarballOf(fx.srv, "myservice-1.2.3.tar", fx.tarPath)
	return fx
}

// testStore is a Fetcher's directories inside a test root that also holds a
// directory hostile bundles aim at, so a test can prove that nothing was
// written anywhere else.
type testStore struct {
	root, dir, escape string
}

func newTestStore(t testing.TB) testStore {
	t.Helper()
	root := t.TempDir()
	s := testStore{root: root, dir: filepath.Join(root, "store"), escape: filepath.Join(root, "escape")}
	require.NoError(t, os.Mkdir(s.escape, 0o750))
	return s
}

func (s testStore) fetcher(t testing.TB, mutate ...func(*Config)) *Fetcher {
	t.Helper()
	cfg := Config{Dir: s.dir}
	for _, m := range mutate {
		m(&cfg)
	}
	f, err := NewFetcher(cfg)
	require.NoError(t, err)
	return f
}

func trust(srv *bundletest.TarServer) func(*Config) {
	return func(c *Config) { c.RootCAs = srv.RootCAs() }
}

// requireOnly asserts the test root holds exactly the store (with the given
// bundles in it, an empty .tmp) and an empty escape directory.
func (s testStore) requireOnly(t testing.TB, digests ...string) {
	t.Helper()
	want := []string{"escape", "store", "store/.tmp"}
	for _, d := range digests {
		want = append(want, "store/sha256-"+strings.TrimPrefix(d, "sha256:"))
	}
	var got []string
	require.NoError(t, filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, err := filepath.Rel(s.root, p)
		require.NoError(t, err)
		if rel == "." {
			return nil
		}
		got = append(got, filepath.ToSlash(rel))
		if strings.HasPrefix(filepath.ToSlash(rel), "store/sha256-") {
			return filepath.SkipDir // a stored bundle's own content
		}
		return nil
	}))
	sort.Strings(want)
	sort.Strings(got)
	require.Equal(t, want, got, "the test root holds only the store and the (empty) escape directory")
}

// progressLog records progress reports.
type progressLog struct{ steps []string }

func (p *progressLog) record(step string, percent int) {
	p.steps = append(p.steps, step)
	_ = percent
}

// distinct returns the steps in order with consecutive repeats collapsed.
func (p *progressLog) distinct() []string {
	var out []string
	for _, s := range p.steps {
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

func redirectHandler(to string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, to, http.StatusFound)
	})
}

func statusHandler(code int, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, body, code)
	})
}

// chunkedFileHandler serves a file without Content-Length.
func chunkedFileHandler(path string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		f, err := os.Open(path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer func() { _ = f.Close() }()
		buf := make([]byte, 32<<10)
		for {
			n, err := f.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
			if err != nil {
				return
			}
		}
	})
}

func mustTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v
}
