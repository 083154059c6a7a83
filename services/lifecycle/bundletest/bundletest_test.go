package bundletest_test

import (
	"archive/tar"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"carvel.dev/imgpkg/pkg/imgpkg/imagetar"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"sigs.k8s.io/yaml"
)

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(raw, &m))
	return m
}

func TestNewBundleDirDefaultsToTheStampedExample(t *testing.T) {
	dir := bundletest.NewBundleDir(t, bundletest.BundleSpec{})
	for _, f := range []string{"config/lib.star", "config/server.lib.yml", "config/values.yml", "config/vcf-service.yml", ".values/transpiler.yml", ".values/render.yml"} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		want, err := os.ReadFile(filepath.Join("testdata", "myservice-example", filepath.FromSlash(f)))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), f)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "package.yml"))
	require.NoError(t, err)
	docs := strings.Split(string(raw), "\n---\n")
	require.Len(t, docs, 2)
	var meta, pkg map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(docs[0]), &meta))
	require.NoError(t, yaml.Unmarshal([]byte(docs[1]), &pkg))
	require.Equal(t, "PackageMetadata", meta["kind"])
	require.Equal(t, "My Service", meta["spec"].(map[string]any)["displayName"])
	require.Equal(t, "Package", pkg["kind"])
	require.Equal(t, "myservice.broadcom.com.1.0.0", pkg["metadata"].(map[string]any)["name"])
	spec := pkg["spec"].(map[string]any)
	require.Equal(t, "myservice.broadcom.com", spec["refName"])
	require.Equal(t, "1.0.0", spec["version"])
	require.Contains(t, spec["valuesSchema"].(map[string]any)["openAPIv3"].(map[string]any), "properties")

	deps, err := os.ReadFile(filepath.Join(dir, "config", ".vcf", "dependencies.yml"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(deps), "#@data/values\n"))
	require.Contains(t, string(deps), "uiplugin1: \"\"")

	lock := readYAML(t, filepath.Join(dir, ".imgpkg", "images.yml"))
	require.Equal(t, "ImagesLock", lock["kind"])
}

func TestNewBundleDirSpec(t *testing.T) {
	digestRef := "registry.example.com/ui@sha256:" + strings.Repeat("a", 64)
	dir := bundletest.NewBundleDir(t, bundletest.BundleSpec{
		Name: "arcturus.example.com", Version: "9.1.0", DisplayName: "Arcturus", ProviderName: "Corp",
		Annotations:                  map[string]string{"a": "b"},
		ValuesSchema:                 map[string]any{"type": "object"},
		KubernetesVersionConstraints: ">=1.30.0",
		ConfigFiles:                  map[string]string{"extra.yml": "x: 1\n"},
		ValuesFiles:                  map[string]string{"transpiler.yml": "regions: []\n"},
		Files:                        map[string]string{".install/dependencies.yml": "plugins: []\n"},
		Images:                       []bundletest.BundleImage{{Image: digestRef, SystemKey: "uiplugin1", Annotations: map[string]string{"kbld.carvel.dev/id": "ui"}}},
		SystemValues:                 map[string]any{"supervisorService": bundletest.SupervisorServiceValues("r/s@sha256:"+strings.Repeat("b", 64), "s.example.com", "1.0.0")},
	})
	raw, err := os.ReadFile(filepath.Join(dir, "package.yml"))
	require.NoError(t, err)
	for _, want := range []string{"refName: arcturus.example.com", "version: 9.1.0", "name: arcturus.example.com.9.1.0", "displayName: Arcturus", "providerName: Corp", "a: b", "constraints: '>=1.30.0'", "type: object"} {
		require.Contains(t, string(raw), want)
	}
	for f, want := range map[string]string{"config/extra.yml": "x: 1\n", ".values/transpiler.yml": "regions: []\n", ".install/dependencies.yml": "plugins: []\n"} {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		require.NoError(t, err)
		require.Equal(t, want, string(got))
	}
	deps, err := os.ReadFile(filepath.Join(dir, "config", ".vcf", "dependencies.yml"))
	require.NoError(t, err)
	require.Contains(t, string(deps), "uiplugin1: "+digestRef)
	require.Contains(t, string(deps), "refName: s.example.com")
	lock := readYAML(t, filepath.Join(dir, ".imgpkg", "images.yml"))
	require.Equal(t, []any{map[string]any{"image": digestRef, "annotations": map[string]any{"kbld.carvel.dev/id": "ui"}}}, lock["images"])

	none := bundletest.NewBundleDir(t, bundletest.BundleSpec{NoPackageYAML: true})
	_, err = os.Stat(filepath.Join(none, "package.yml"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestPushAndCopyToTar checks the tarball is what imgpkg copy writes: the
// bundle labelled as root bundle, its images and its signature inside.
func TestPushAndCopyToTar(t *testing.T) {
	reg := bundletest.NewRegistry(t)
	plugin := bundletest.PushPluginImage(t, reg, "ui:1", bundletest.PluginManifest("p", "1"), true)
	dir := bundletest.NewBundleDir(t, bundletest.BundleSpec{Images: []bundletest.BundleImage{{Image: plugin, SystemKey: "uiplugin1"}}})
	digest := bundletest.PushBundle(t, reg, dir, "svc:1.0.0")
	require.Regexp(t, `^sha256:[0-9a-f]{64}$`, digest)
	require.Equal(t, digest, bundletest.Digest(t, reg, reg.Ref("svc:1.0.0")))
	payload := bundletest.Sign(t, reg, "svc", digest)
	require.Contains(t, string(payload), digest)

	items, err := imagetar.NewTarReader(bundletest.CopyToTar(t, reg, reg.Ref("svc:1.0.0")), 1).Read()
	require.NoError(t, err)
	got := map[string]bool{}
	for _, it := range items {
		require.NotNil(t, it.Image)
		d, err := (*it.Image).Digest()
		require.NoError(t, err)
		_, root := it.Labels["dev.carvel.imgpkg.copy.root-bundle"]
		switch {
		case d.String() == digest:
			require.True(t, root, "the bundle is the root bundle")
			cfg, err := (*it.Image).ConfigFile()
			require.NoError(t, err)
			require.Equal(t, "true", cfg.Config.Labels[bundletest.BundleLabel])
			got["bundle"] = true
		case strings.HasSuffix(plugin, d.String()):
			got["plugin"] = true
		case (*it.Image).Tag() == "sha256-"+strings.TrimPrefix(digest, "sha256:")+".sig":
			got["signature"] = true
		}
	}
	require.Equal(t, map[string]bool{"bundle": true, "plugin": true, "signature": true}, got)

	// A plain image copied with -i is not a bundle tarball.
	items, err = imagetar.NewTarReader(bundletest.CopyImageToTar(t, reg, plugin), 1).Read()
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.NotContains(t, items[0].Labels, "dev.carvel.imgpkg.copy.root-bundle")
}

func TestCopyToRepoRelocates(t *testing.T) {
	reg := bundletest.NewRegistry(t)
	plugin := bundletest.PushPluginImage(t, reg, "ui:1", bundletest.PluginManifest("p", "1"), false)
	dir := bundletest.NewBundleDir(t, bundletest.BundleSpec{Images: []bundletest.BundleImage{{Image: plugin}}})
	digest := bundletest.PushBundle(t, reg, dir, "svc:1")
	ref := bundletest.CopyToRepo(t, reg, reg.Ref("svc:1"), "copy/svc")
	require.Equal(t, reg.Ref("copy/svc")+"@"+digest, ref)
	// The plugin now also lives in the bundle's new repository.
	require.Equal(t, plugin[strings.Index(plugin, "@")+1:], bundletest.Digest(t, reg, reg.Ref("copy/svc")+plugin[strings.Index(plugin, "@"):]))
}

func TestTLSRegistry(t *testing.T) {
	reg := bundletest.NewTLSRegistry(t)
	require.NotNil(t, reg.RootCAs())
	dir := bundletest.NewBundleDir(t, bundletest.BundleSpec{})
	digest := bundletest.PushBundle(t, reg, dir, "svc:1")
	ref, err := name.ParseReference(reg.Ref("svc:1"))
	require.NoError(t, err)
	desc, err := remote.Head(ref, remote.WithTransport(reg.Transport()))
	require.NoError(t, err)
	require.Equal(t, digest, desc.Digest.String())

	untrusted := http.DefaultTransport.(*http.Transport).Clone()
	untrusted.TLSClientConfig = &tls.Config{RootCAs: bundletest.NewCA(t).Pool, MinVersion: tls.VersionTLS12}
	resp, err := (&http.Client{Transport: untrusted}).Do(mustRequest(t, "https://"+reg.Host+"/v2/"))
	if err == nil {
		_ = resp.Body.Close()
	}
	require.ErrorContains(t, err, "certificate signed by unknown authority", "another CA does not trust it")
}

func mustRequest(t *testing.T, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	return req
}

func TestTarServer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.tar")
	require.NoError(t, os.WriteFile(path, []byte("tar bytes"), 0o600))
	for name, srv := range map[string]*bundletest.TarServer{"https": bundletest.NewTarServer(t), "http": bundletest.NewPlainTarServer(t)} {
		t.Run(name, func(t *testing.T) {
			u := bundletest.TarballOf(srv, "x.tar", path)
			require.True(t, strings.HasPrefix(u, name+"://127.0.0.1:"), u)
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.TLSClientConfig = &tls.Config{RootCAs: srv.RootCAs(), MinVersion: tls.VersionTLS12}
			client := &http.Client{Transport: tr}
			resp, err := client.Get(u)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "tar bytes", string(body))
			require.Equal(t, "9", resp.Header.Get("Content-Length"))

			resp, err = client.Get(srv.URL("missing.tar"))
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusNotFound, resp.StatusCode)

			srv.Handle("teapot.tar", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
			resp, err = client.Get(srv.URL("teapot.tar"))
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusTeapot, resp.StatusCode)
			require.Equal(t, 1, srv.Hits("x.tar"))
			require.Equal(t, 1, srv.Hits("missing.tar"))
		})
	}
}

// TestHostileCasesAreWhatTheySay: each case's layer really contains the
// hazard it is named after, so a fetcher passing the hostile table passed
// for the right reason.
func TestHostileCasesAreWhatTheySay(t *testing.T) {
	escape := t.TempDir()
	l := bundletest.HostileLimits{MaxFiles: 20, MaxFileBytes: 4096, MaxBundleBytes: 16384}
	cases := bundletest.HostileCases(escape, l)
	type stats struct {
		names             []string
		types             []byte
		files             int
		biggest, total    int64
		truncated, hasPkg bool
	}
	read := func(c bundletest.HostileCase) stats {
		var s stats
		tr := tar.NewReader(bytes.NewReader(bundletest.HostileLayer(t, c)))
		for {
			hdr, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return s
			}
			if err != nil {
				s.truncated = true
				return s
			}
			n, err := io.Copy(io.Discard, tr)
			if err != nil {
				s.truncated = true
				return s
			}
			s.names, s.types = append(s.names, hdr.Name), append(s.types, hdr.Typeflag)
			if hdr.Typeflag == tar.TypeReg {
				s.files++
				s.total += n
				s.biggest = max(s.biggest, n)
			}
			if hdr.Name == "package.yml" {
				s.hasPkg = true
			}
		}
	}
	check := map[string]func(s stats) bool{
		"path traversal":                         func(s stats) bool { return strings.HasPrefix(s.names[len(s.names)-1], "../") },
		"nested path traversal":                  func(s stats) bool { return strings.Contains(s.names[len(s.names)-1], "/../") },
		"absolute path":                          func(s stats) bool { return filepath.IsAbs(s.names[len(s.names)-1]) },
		"symlink out of the bundle":              func(s stats) bool { return s.types[len(s.types)-1] == tar.TypeSymlink },
		"write through a symlink":                func(s stats) bool { return s.types[len(s.types)-2] == tar.TypeSymlink },
		"relative symlink inside the bundle":     func(s stats) bool { return s.types[len(s.types)-1] == tar.TypeSymlink },
		"hardlink":                               func(s stats) bool { return s.types[len(s.types)-1] == tar.TypeLink },
		"hardlink out of the bundle":             func(s stats) bool { return s.types[len(s.types)-1] == tar.TypeLink },
		"character device":                       func(s stats) bool { return s.types[len(s.types)-1] == tar.TypeChar },
		"block device":                           func(s stats) bool { return s.types[len(s.types)-1] == tar.TypeBlock },
		"fifo":                                   func(s stats) bool { return s.types[len(s.types)-1] == tar.TypeFifo },
		"too many files":                         func(s stats) bool { return s.files > l.MaxFiles },
		"file too big":                           func(s stats) bool { return s.biggest > l.MaxFileBytes },
		"bundle too big in total":                func(s stats) bool { return s.total > l.MaxBundleBytes && s.biggest <= l.MaxFileBytes },
		"duplicate path":                         func(s stats) bool { return s.names[len(s.names)-1] == "package.yml" },
		"file and directory at the same path":    func(s stats) bool { return s.names[len(s.names)-1] == "config/x/y.yml" },
		"truncated layer":                        func(s stats) bool { return s.truncated },
		"not an imgpkg bundle":                   func(s stats) bool { return s.hasPkg && !s.truncated },
		"missing images.yml":                     func(s stats) bool { return !strings.Contains(strings.Join(s.names, ","), "images.yml") },
		"invalid images.yml":                     func(s stats) bool { return s.names[0] == ".imgpkg/images.yml" },
		"missing package.yml":                    func(s stats) bool { return !s.hasPkg },
		"package.yml without a Package document": func(s stats) bool { return s.hasPkg },
		"package.yml is not YAML":                func(s stats) bool { return s.hasPkg },
	}
	for _, c := range cases {
		fn, ok := check[c.Name]
		require.True(t, ok, "case %q has a check", c.Name)
		require.True(t, fn(read(c)), "case %q contains its hazard", c.Name)
		delete(check, c.Name)
	}
	require.Empty(t, check)
}
