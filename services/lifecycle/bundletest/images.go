package bundletest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"maps"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/require"
)

// BundleLabel is the image config label imgpkg puts on bundle images.
const BundleLabel = "dev.carvel.imgpkg.bundle"

// Entry is one entry of a crafted tar layer. Nothing about it is validated:
// that is the point.
type Entry struct {
	Name     string
	Type     byte // tar.TypeReg when zero
	Body     []byte
	Linkname string
	Mode     int64 // 0o644 when zero
	Devmajor int64
	Devminor int64
}

// LayerTar writes entries into an uncompressed tar archive.
func LayerTar(t testing.TB, entries []Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ, mode := e.Type, e.Mode
		if typ == 0 {
			typ = tar.TypeReg
		}
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Name: e.Name, Typeflag: typ, Linkname: e.Linkname, Mode: mode, Devmajor: e.Devmajor, Devminor: e.Devminor, Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(e.Body))
		}
		require.NoError(t, tw.WriteHeader(hdr), "tar header %q", e.Name)
		if typ == tar.TypeReg {
			_, err := tw.Write(e.Body)
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

// ImageFromLayer builds a single-layer image (gzip layer, Docker media
// types as imgpkg writes them) from raw uncompressed layer bytes, with the
// given config labels.
func ImageFromLayer(t testing.TB, layerBytes []byte, labels map[string]string) v1.Image {
	t.Helper()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, layer)
	require.NoError(t, err)
	if len(labels) > 0 {
		cfg, err := img.ConfigFile()
		require.NoError(t, err)
		cfg = cfg.DeepCopy()
		cfg.Config.Labels = labels
		img, err = mutate.ConfigFile(img, cfg)
		require.NoError(t, err)
	}
	return img
}

// PushImage pushes img to <reg>/<repoTag> and returns its digest reference
// "<reg>/<repo>@sha256:…", the form images.yml uses.
func PushImage(t testing.TB, reg *Registry, repoTag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(reg.Ref(repoTag), reg.nameOpts()...)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img, remote.WithTransport(reg.Transport())), "push %s", ref)
	d, err := img.Digest()
	require.NoError(t, err)
	return ref.Context().Digest(d.String()).String()
}

// PushIndex pushes an image index to <reg>/<repoTag> and returns its digest
// reference.
func PushIndex(t testing.TB, reg *Registry, repoTag string, idx v1.ImageIndex) string {
	t.Helper()
	ref, err := name.ParseReference(reg.Ref(repoTag), reg.nameOpts()...)
	require.NoError(t, err)
	require.NoError(t, remote.WriteIndex(ref, idx, remote.WithTransport(reg.Transport())), "push %s", ref)
	d, err := idx.Digest()
	require.NoError(t, err)
	return ref.Context().Digest(d.String()).String()
}

// PluginManifest is a minimal UI plugin manifest.json for pluginName.
func PluginManifest(pluginName, version string) []byte {
	b, _ := json.Marshal(map[string]any{
		"urn":     "urn:vmware:vcloud:plugin:" + pluginName,
		"name":    pluginName,
		"version": version,
		"vendor":  "Broadcom",
		"module":  "PluginModule",
		"route":   pluginName,
		"scope":   []string{"tenant", "service-provider"},
	})
	return b
}

// PluginImage builds a UI plugin image whose layer carries manifest: as
// plugin/manifest.json, or (zipped) inside plugin.zip as it ships to VCF
// Automation.
func PluginImage(t testing.TB, manifest []byte, zipped bool) v1.Image {
	t.Helper()
	return PluginImageWithAssets(t, manifest, zipped, 0)
}

// PluginImageWithAssets is PluginImage with assetBytes of incompressible
// JavaScript-sized payload, for realistic sizes in benchmarks.
func PluginImageWithAssets(t testing.TB, manifest []byte, zipped bool, assetBytes int) v1.Image {
	t.Helper()
	js := []byte("console.log('plugin');\n")
	if assetBytes > 0 {
		js = make([]byte, assetBytes)
		_, err := rand.Read(js)
		require.NoError(t, err)
	}
	var entries []Entry
	if zipped {
		var zbuf bytes.Buffer
		zw := zip.NewWriter(&zbuf)
		for _, f := range []struct {
			name string
			body []byte
		}{{"manifest.json", manifest}, {"bundle.js", js}, {"i18n/manifest.json", []byte(`{"not":"the plugin manifest"}`)}} {
			w, err := zw.Create(f.name)
			require.NoError(t, err)
			_, err = w.Write(f.body)
			require.NoError(t, err)
		}
		require.NoError(t, zw.Close())
		entries = []Entry{{Name: "plugin.zip", Body: zbuf.Bytes()}}
	} else {
		entries = []Entry{
			{Name: "plugin/", Type: tar.TypeDir, Mode: 0o755},
			{Name: "plugin/manifest.json", Body: manifest},
			{Name: "plugin/bundle.js", Body: js},
		}
	}
	return ImageFromLayer(t, LayerTar(t, entries), nil)
}

// PushPluginImage pushes a UI plugin image (see PluginImage) and returns its
// digest reference.
func PushPluginImage(t testing.TB, reg *Registry, repoTag string, manifest []byte, zipped bool) string {
	t.Helper()
	return PushImage(t, reg, repoTag, PluginImage(t, manifest, zipped))
}

// PushSupervisorServiceBundle pushes a small imgpkg bundle like the one a
// SupervisorService references (a Carvel package for the Supervisor, its
// contents SupervisorServiceFiles) with imgpkg push -b, and returns its
// digest reference.
func PushSupervisorServiceBundle(t testing.TB, reg *Registry, repoTag, refName, version string) string {
	t.Helper()
	return PushPackageBundle(t, reg, repoTag, SupervisorServiceFiles(refName, version))
}

// SupervisorServiceFiles are the contents of a small Supervisor Service
// package that kapp-controller can install on an API server without nodes:
// a ConfigMap named refName holding the package version and the "region"
// data value (default "").
func SupervisorServiceFiles(refName, version string) map[string]string {
	return map[string]string{
		"config/values.yml": "#@data/values\n---\nregion: \"\"\n",
		"config/settings.yml": `#@ load("@ytt:data", "data")
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + refName + `
data:
  version: "` + version + `"
  region: #@ data.values.region
`,
	}
}

// PushPackageBundle pushes a Carvel package's contents as kapp-controller
// fetches them (files such as config/*.yml, relative to the bundle root)
// as an imgpkg bundle with imgpkg push -b, and returns its digest
// reference.
func PushPackageBundle(t testing.TB, reg *Registry, repoTag string, files map[string]string) string {
	t.Helper()
	files = maps.Clone(files)
	files[".imgpkg/images.yml"] = "---\napiVersion: imgpkg.carvel.dev/v1alpha1\nkind: ImagesLock\n"
	digest := PushBundle(t, reg, writeTree(t, files), repoTag)
	repo := strings.SplitN(repoTag, ":", 2)[0]
	return reg.Ref(repo) + "@" + digest
}

// CosignPayloadType is the media type of cosign simple-signing layers.
const CosignPayloadType = "application/vnd.dev.cosign.simplesigning.v1+json"

// Sign pushes a cosign-style signature image for digest into <reg>/<repo>,
// tagged sha256-<hex>.sig as cosign does, and returns the simple-signing
// payload it carries. The signature bytes are not a real signature (no key
// is involved); the fetcher records signatures, it does not verify them.
func Sign(t testing.TB, reg *Registry, repo, digest string) []byte {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]any{"docker-reference": reg.Ref(repo)},
			"image":    map[string]any{"docker-manifest-digest": digest},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	})
	require.NoError(t, err)
	layer := static.NewLayer(payload, types.MediaType(CosignPayloadType))
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer: layer,
		Annotations: map[string]string{
			"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString([]byte("not-a-real-signature:" + digest)),
		},
	})
	require.NoError(t, err)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	tag := "sha256-" + strings.TrimPrefix(digest, "sha256:") + ".sig"
	PushImage(t, reg, repo+":"+tag, img)
	return payload
}
