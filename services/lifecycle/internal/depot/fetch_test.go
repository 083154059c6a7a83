package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/require"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"sigs.k8s.io/yaml"
)

// requireFixtureBundle checks everything a Fetch of the fixture must yield.
func requireFixtureBundle(t *testing.T, fx *fixture, b *bundle.Bundle, source string) {
	t.Helper()
	require.Equal(t, fx.digest, b.Digest)
	require.Equal(t, source, b.Source)

	// The tree: every file of the source tree except .imgpkg/, byte for byte.
	var want []bundle.File
	require.NoError(t, filepath.WalkDir(fx.dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(fx.dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".imgpkg" {
				return filepath.SkipDir
			}
			return nil
		}
		content, err := os.ReadFile(p)
		want = append(want, bundle.File{Path: rel, Content: content})
		return err
	}))
	sort.Slice(want, func(i, j int) bool { return want[i].Path < want[j].Path })
	require.Equal(t, want, b.Files)
	var paths []string
	for _, f := range b.Files {
		paths = append(paths, f.Path)
	}
	require.Equal(t, []string{
		".values/render.yml", ".values/transpiler.yml", "config/.vcf/dependencies.yml", "config/lib.star",
		"config/server.lib.yml", "config/values.yml", "config/vcf-service.yml", "package.yml",
	}, paths)
	for _, f := range b.Files {
		onDisk, err := os.ReadFile(filepath.Join(b.Dir, filepath.FromSlash(f.Path)))
		require.NoError(t, err)
		require.Equal(t, f.Content, onDisk, "Dir holds the same tree as Files")
		info, err := os.Stat(filepath.Join(b.Dir, filepath.FromSlash(f.Path)))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o444), info.Mode().Perm(), "stored files are read-only")
	}

	// package.yml and its documents.
	pkgFile, err := os.ReadFile(filepath.Join(fx.dir, "package.yml"))
	require.NoError(t, err)
	require.Equal(t, pkgFile, b.PackageFile)
	require.Equal(t, bundle.Package{
		Name:                         "myservice.broadcom.com.1.2.3",
		RefName:                      "myservice.broadcom.com",
		Version:                      "1.2.3",
		Annotations:                  map[string]string{"precheck.vcfsm.io/_service": "myservice-precheck"},
		KubernetesVersionConstraints: ">=1.29.0",
		ValuesSchema:                 b.Package.ValuesSchema,
		ProviderName:                 "Broadcom",
		DisplayName:                  "My Service",
	}, b.Package)
	require.Equal(t, "myservice values schema", b.Package.ValuesSchema["title"])
	var pkgDoc map[string]any
	require.NoError(t, yaml.Unmarshal(b.PackageYAML, &pkgDoc))
	require.Equal(t, "Package", pkgDoc["kind"])
	require.NotContains(t, string(b.PackageYAML), "PackageMetadata")
	require.Equal(t, "PackageMetadata", b.Metadata["kind"])
	require.Equal(t, "My Service", b.Metadata["spec"].(map[string]any)["displayName"])
	_, err = json.Marshal(b.Metadata)
	require.NoError(t, err, "Metadata is JSON-compatible")

	// images.yml, the images carried, the plugin manifest, the signature.
	lock, err := os.ReadFile(filepath.Join(fx.dir, ".imgpkg", "images.yml"))
	require.NoError(t, err)
	require.Equal(t, lock, b.ImagesLock)
	require.Equal(t, []bundle.Image{
		{Image: fx.pluginRef, Annotations: map[string]string{"kbld.carvel.dev/id": "myservice-ui"}},
		{Image: fx.ssvcRef, Annotations: map[string]string{"kbld.carvel.dev/id": "my-supervisor-svc"}},
	}, b.Images)
	for _, ref := range []string{fx.pluginRef, fx.ssvcRef} {
		require.Contains(t, b.BundledImageDigests, ref[strings.Index(ref, "@")+1:])
	}
	require.Contains(t, b.BundledImageDigests, fx.digest)
	require.True(t, sort.StringsAreSorted(b.BundledImageDigests))
	require.Equal(t, map[string][]byte{fx.pluginRef: fx.manifest}, b.PluginManifests)
	require.Len(t, b.Signatures, 1)
	sig := b.Signatures[0]
	require.Equal(t, fx.digest, sig.Digest)
	require.Equal(t, "sha256-"+strings.TrimPrefix(fx.digest, "sha256:")+".sig", sig.Tag)
	require.Equal(t, [][]byte{fx.sigPayload}, sig.Payloads)
	require.Contains(t, sig.Annotations[0], "dev.cosignproject.cosign/signature")
	require.Contains(t, b.BundledImageDigests, sig.SignatureImage)
	require.True(t, b.Signed())
}

func TestFetchTarballOverHTTPS(t *testing.T) {
	fx := newFixture(t)
	s := newTestStore(t)
	f := s.fetcher(t, trust(fx.srv))
	var progress progressLog
	b, err := f.Fetch(context.Background(), fx.tarURL, progress.record)
	require.NoError(t, err)
	requireFixtureBundle(t, fx, b, fx.tarURL)
	require.Empty(t, b.RegistryRepository)
	require.Equal(t, filepath.Join(s.dir, "sha256-"+strings.TrimPrefix(fx.digest, "sha256:"), "tree"), b.Dir)
	require.Equal(t, []string{bundle.StepDownloading, bundle.StepExtracting, bundle.StepInspecting, bundle.StepDone}, progress.distinct())
	s.requireOnly(t, fx.digest)
}

func TestFetchOCI(t *testing.T) {
	fx := newFixture(t)
	for _, tc := range []struct {
		name   string
		source func() string
	}{
		{"by tag", func() string { return fx.reg.OCI(fx.repoTag) }},
		{"by digest", func() string { return fx.reg.OCI(fixtureRepo + "@" + fx.digest) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			f := s.fetcher(t)
			var progress progressLog
			source := tc.source()
			b, err := f.Fetch(context.Background(), source, progress.record)
			require.NoError(t, err)
			requireFixtureBundle(t, fx, b, source)
			require.Equal(t, fx.reg.Ref(fixtureRepo), b.RegistryRepository)
			require.Equal(t, []string{bundle.StepDownloading, bundle.StepExtracting, bundle.StepInspecting, bundle.StepDone}, progress.distinct())
			s.requireOnly(t, fx.digest)
		})
	}
}

// TestFetchOCIRelocated fetches a bundle relocated with imgpkg copy
// --to-repo: its images now live in the bundle's own repository.
func TestFetchOCIRelocated(t *testing.T) {
	fx := newFixture(t)
	ref := bundletest.CopyToRepo(t, fx.reg, fx.reg.Ref(fx.repoTag), "airgap/myservice")
	s := newTestStore(t)
	b, err := s.fetcher(t).Fetch(context.Background(), "oci://"+ref, nil)
	require.NoError(t, err)
	require.Equal(t, fx.digest, b.Digest)
	require.Equal(t, fx.reg.Ref("airgap/myservice"), b.RegistryRepository)
	require.Equal(t, map[string][]byte{fx.pluginRef: fx.manifest}, b.PluginManifests, "the plugin is found at its relocated place")
	require.True(t, b.Signed(), "imgpkg copy --cosign-signatures relocated the signature")
}

func TestFetchOCIFromTLSRegistry(t *testing.T) {
	reg := bundletest.NewTLSRegistry(t)
	dir := bundletest.NewBundleDir(t, bundletest.BundleSpec{})
	digest := bundletest.PushBundle(t, reg, dir, "myservice:1.0.0")

	s := newTestStore(t)
	b, err := s.fetcher(t, func(c *Config) { c.RootCAs = reg.RootCAs() }).Fetch(context.Background(), reg.OCI("myservice:1.0.0"), nil)
	require.NoError(t, err)
	require.Equal(t, digest, b.Digest)
	require.Equal(t, "1.0.0", b.Package.Version)
	require.False(t, b.Signed())
	require.Empty(t, b.PluginManifests)

	other := bundletest.NewCA(t)
	s2 := newTestStore(t)
	_, err = s2.fetcher(t, func(c *Config) { c.RootCAs = other.Pool }).Fetch(context.Background(), reg.OCI("myservice:1.0.0"), nil)
	require.ErrorIs(t, err, bundle.ErrFetch)
	s2.requireOnly(t)
}

func TestFetchPluginManifestDirectlyInLayer(t *testing.T) {
	reg := bundletest.NewRegistry(t)
	manifest := bundletest.PluginManifest("direct", "0.1.0")
	plugin := bundletest.PushPluginImage(t, reg, "ui:0.1.0", manifest, false)
	other := bundletest.PushImage(t, reg, "plain:1", bundletest.ImageFromLayer(t, bundletest.LayerTar(t, []bundletest.Entry{{Name: "etc/app.conf", Body: []byte("x=1\n")}}), nil))
	dir := bundletest.NewBundleDir(t, bundletest.BundleSpec{Images: []bundletest.BundleImage{{Image: plugin, SystemKey: "uiplugin1"}, {Image: other}}})
	bundletest.PushBundle(t, reg, dir, "svc:1")
	tarPath := bundletest.CopyToTar(t, reg, reg.Ref("svc:1"))

	for name, source := range map[string]string{"oci": reg.OCI("svc:1"), "tarball": ""} {
		t.Run(name, func(t *testing.T) {
			s := newTestStore(t)
			var f *Fetcher
			if source == "" {
				srv := bundletest.NewTarServer(t)
				source = bundletest.TarballOf(srv, "svc.tar", tarPath)
				f = s.fetcher(t, trust(srv))
			} else {
				f = s.fetcher(t)
			}
			b, err := f.Fetch(context.Background(), source, nil)
			require.NoError(t, err)
			require.Equal(t, map[string][]byte{plugin: manifest}, b.PluginManifests, "only the plugin image has a manifest.json")
			require.False(t, b.Signed())
			require.Empty(t, b.Signatures)
		})
	}
}

func TestFetchHTTPNeedsAllowInsecure(t *testing.T) {
	fx := newFixture(t)
	plain := bundletest.NewPlainTarServer(t)
	source := bundletest.TarballOf(plain, "myservice.tar", fx.tarPath)

	s := newTestStore(t)
	_, err := s.fetcher(t).Fetch(context.Background(), source, nil)
	require.ErrorIs(t, err, bundle.ErrInvalidSource)
	require.ErrorContains(t, err, "--allow-insecure-sources")
	require.Zero(t, plain.Hits("myservice.tar"), "nothing was requested")

	b, err := s.fetcher(t, func(c *Config) { c.AllowInsecure = true }).Fetch(context.Background(), source, nil)
	require.NoError(t, err)
	require.Equal(t, fx.digest, b.Digest)
	s.requireOnly(t, fx.digest)
}

func TestFetchHTTPErrors(t *testing.T) {
	fx := newFixture(t)
	redirectToHTTP := bundletest.NewPlainTarServer(t)
	redirectToHTTP.Add("myservice.tar", fx.tarPath)
	fx.srv.Handle("redirect.tar", redirectHandler(redirectToHTTP.URL("myservice.tar")))
	fx.srv.Handle("broken.tar", statusHandler(500, "disk on fire"))

	tests := []struct {
		name   string
		source string
		cfg    func(*Config)
		want   error
		msg    string
	}{
		{"not found", fx.srv.URL("missing.tar"), trust(fx.srv), bundle.ErrFetch, "404 Not Found"},
		{"server error", fx.srv.URL("broken.tar"), trust(fx.srv), bundle.ErrFetch, "500 Internal Server Error: disk on fire"},
		{"untrusted CA", fx.tarURL, trust(bundletest.NewTarServer(t)), bundle.ErrFetch, "does not trust"},
		{"redirect to http", fx.srv.URL("redirect.tar"), trust(fx.srv), bundle.ErrFetch, "refusing redirect to non-https URL"},
		{"unreachable", "https://127.0.0.1:1/x.tar", nil, bundle.ErrFetch, "127.0.0.1:1"},
		{"too big for MaxDownloadBytes", fx.tarURL, func(c *Config) {
			trust(fx.srv)(c)
			c.Limits.MaxDownloadBytes = bundletest.FileSize(t, fx.tarPath) - 1
		}, bundle.ErrHostile, "MaxDownloadBytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			var cfg []func(*Config)
			if tc.cfg != nil {
				cfg = append(cfg, tc.cfg)
			}
			_, err := s.fetcher(t, cfg...).Fetch(context.Background(), tc.source, nil)
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, tc.msg)
			requireNamedOnce(t, err, tc.source)
			s.requireOnly(t)
		})
	}
}

// TestFetchDownloadLimitWithoutContentLength streams a chunked response:
// the limit must hold while streaming, not only on Content-Length.
func TestFetchDownloadLimitWithoutContentLength(t *testing.T) {
	fx := newFixture(t)
	fx.srv.Handle("chunked.tar", chunkedFileHandler(fx.tarPath))
	s := newTestStore(t)
	f := s.fetcher(t, trust(fx.srv), func(c *Config) { c.Limits.MaxDownloadBytes = bundletest.FileSize(t, fx.tarPath) / 2 })
	var progress progressLog
	_, err := f.Fetch(context.Background(), fx.srv.URL("chunked.tar"), progress.record)
	require.ErrorIs(t, err, bundle.ErrHostile)
	require.ErrorContains(t, err, "MaxDownloadBytes")
	s.requireOnly(t)

	// Unlimited, the same chunked download works and reports unknown percent.
	b, err := s.fetcher(t, trust(fx.srv)).Fetch(context.Background(), fx.srv.URL("chunked.tar"), progress.record)
	require.NoError(t, err)
	require.Equal(t, fx.digest, b.Digest)
}

func TestFetchIsIdempotentPerDigest(t *testing.T) {
	fx := newFixture(t)
	s := newTestStore(t)
	f := s.fetcher(t, trust(fx.srv))
	first, err := f.Fetch(context.Background(), fx.tarURL, nil)
	require.NoError(t, err)
	stored := filepath.Dir(first.Dir)
	before, err := os.Stat(stored)
	require.NoError(t, err)

	for _, source := range []string{fx.tarURL, fx.reg.OCI(fx.repoTag)} {
		var progress progressLog
		again, err := f.Fetch(context.Background(), source, progress.record)
		require.NoError(t, err)
		require.NotContains(t, progress.steps, bundle.StepExtracting, "a stored digest is not extracted again")
		require.Equal(t, source, again.Source)
		again.Source = first.Source
		require.Equal(t, first, again)
	}
	after, err := os.Stat(stored)
	require.NoError(t, err)
	require.Equal(t, before.Sys().(*syscall.Stat_t).Ino, after.Sys().(*syscall.Stat_t).Ino, "the stored directory was not replaced")
	s.requireOnly(t, fx.digest)
}

func TestConcurrentFetchesOfTheSameBundle(t *testing.T) {
	fx := newFixture(t)
	s := newTestStore(t)
	f := s.fetcher(t, trust(fx.srv))
	const n = 4
	results := make([]*bundle.Bundle, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			source := fx.tarURL
			if i%2 == 1 {
				source = fx.reg.OCI(fx.repoTag)
			}
			results[i], errs[i] = f.Fetch(context.Background(), source, nil)
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		require.NoError(t, errs[i])
		require.Equal(t, fx.digest, results[i].Digest)
		require.Equal(t, results[0].Files, results[i].Files)
	}
	s.requireOnly(t, fx.digest)
}

func TestLoadAfterRestartAndRemove(t *testing.T) {
	fx := newFixture(t)
	s := newTestStore(t)
	fetched, err := s.fetcher(t, trust(fx.srv)).Fetch(context.Background(), fx.tarURL, nil)
	require.NoError(t, err)

	restarted := s.fetcher(t) // a new process: new Fetcher, same directory
	stored, err := restarted.Stored()
	require.NoError(t, err)
	require.Equal(t, []string{fx.digest}, stored)
	loaded, err := restarted.Load(fx.digest)
	require.NoError(t, err)
	require.Equal(t, fetched, loaded)

	absent := "sha256:" + strings.Repeat("0", 64)
	_, err = restarted.Load(absent)
	require.ErrorIs(t, err, bundle.ErrNotFound)
	require.NoError(t, restarted.Remove(absent), "removing an absent bundle is not an error")
	for _, digest := range []string{
		"sha256:../../etc",
		"../" + strings.TrimPrefix(fx.digest, "sha256:"),
		"SHA256:" + strings.TrimPrefix(fx.digest, "sha256:"),
		"",
	} {
		_, err := restarted.Load(digest)
		require.ErrorIs(t, err, bundle.ErrNotFound, "digest %q", digest)
		require.ErrorIs(t, restarted.Remove(digest), bundle.ErrNotFound, "a malformed digest %q is refused", digest)
	}

	require.NoError(t, restarted.Remove(fx.digest))
	_, err = restarted.Load(fx.digest)
	require.ErrorIs(t, err, bundle.ErrNotFound)
	require.NoError(t, restarted.Remove(fx.digest), "removing twice is fine")
	stored, err = restarted.Stored()
	require.NoError(t, err)
	require.Empty(t, stored)
	s.requireOnly(t)

	// After removal a fetch stores it again.
	again, err := s.fetcher(t, trust(fx.srv)).Fetch(context.Background(), fx.tarURL, nil)
	require.NoError(t, err)
	require.Equal(t, fetched, again)
}

func TestLoadRejectsCorruptFacts(t *testing.T) {
	fx := newFixture(t)
	s := newTestStore(t)
	f := s.fetcher(t, trust(fx.srv))
	b, err := f.Fetch(context.Background(), fx.tarURL, nil)
	require.NoError(t, err)
	facts := filepath.Join(filepath.Dir(b.Dir), factsFile)
	require.NoError(t, os.Chmod(facts, 0o644))
	require.NoError(t, os.WriteFile(facts, []byte(`{"version":1,"digest":"sha256:`+strings.Repeat("1", 64)+`"}`), 0o644))
	_, err = f.Load(fx.digest)
	require.ErrorContains(t, err, "not this bundle")
}

func TestFetchOCIErrors(t *testing.T) {
	reg := bundletest.NewRegistry(t)
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: bundletest.ImageFromLayer(t, bundletest.LayerTar(t, bundletest.ValidEntries()), map[string]string{bundletest.BundleLabel: "true"})})
	bundletest.PushIndex(t, reg, "index:1", idx)

	tests := []struct {
		name   string
		source string
		want   error
		msg    string
	}{
		{"unknown tag", reg.OCI("myservice:nope"), bundle.ErrFetch, "404"},
		{"unknown repository", reg.OCI("nope@sha256:" + strings.Repeat("a", 64)), bundle.ErrFetch, "404"},
		{"image index", reg.OCI("index:1"), bundle.ErrHostile, "image index"},
		{"registry down", "oci://127.0.0.1:1/myservice:1", bundle.ErrFetch, "127.0.0.1:1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t)
			_, err := s.fetcher(t).Fetch(context.Background(), tc.source, nil)
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, tc.msg)
			requireNamedOnce(t, err, tc.source)
			s.requireOnly(t)
		})
	}
}

// requireNamedOnce: an error names its source once, and its repository
// (for oci://) nowhere else: the fetcher wraps the source once, and what
// failed inside says what, not where again.
func requireNamedOnce(t *testing.T, err error, source string) {
	t.Helper()
	require.Equal(t, 1, strings.Count(err.Error(), source), "the source is named once: %v", err)
	if ref, ok := strings.CutPrefix(source, "oci://"); ok {
		require.Equal(t, 1, strings.Count(err.Error(), ref), "the reference is not repeated: %v", err)
	}
}

func TestBundleWithoutMetadata(t *testing.T) {
	reg := bundletest.NewRegistry(t)
	dir := bundletest.NewBundleDir(t, bundletest.BundleSpec{PackageYAML: bundletest.MinimalPackage})
	bundletest.PushBundle(t, reg, dir, "bare:1")
	s := newTestStore(t)
	b, err := s.fetcher(t).Fetch(context.Background(), reg.OCI("bare:1"), nil)
	require.NoError(t, err)
	require.Nil(t, b.Metadata)
	require.Equal(t, "hostile.example.com", b.Package.RefName)
	require.Empty(t, b.Package.DisplayName)
	require.Equal(t, bundletest.MinimalPackage, string(b.PackageYAML))
}

func TestNewFetcherValidation(t *testing.T) {
	_, err := NewFetcher(Config{})
	require.ErrorContains(t, err, "Config.Dir is required")
	_, err = NewFetcher(Config{Dir: t.TempDir(), Limits: Limits{MaxFiles: -1}})
	require.ErrorContains(t, err, "must not be negative")
	_, err = NewFetcher(Config{Dir: t.TempDir(), HTTPTimeout: -1})
	require.ErrorContains(t, err, "negative")

	// Leftovers of a crashed process are cleaned, fresh work of another Fetcher is not.
	dir := t.TempDir()
	tmp := filepath.Join(dir, ".tmp")
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "stage-old", "tree", "config"), 0o750))
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "stage-fresh"), 0o750))
	require.NoError(t, os.Chmod(filepath.Join(tmp, "stage-old", "tree", "config"), 0o555))
	old := mustTime(t, "2020-01-01T00:00:00Z")
	require.NoError(t, os.Chtimes(filepath.Join(tmp, "stage-old"), old, old))
	_, err = NewFetcher(Config{Dir: dir})
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(tmp, "stage-old"))
	require.ErrorIs(t, err, os.ErrNotExist)
	_, err = os.Stat(filepath.Join(tmp, "stage-fresh"))
	require.NoError(t, err)
}
