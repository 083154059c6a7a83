package render

import (
	"context"
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/vcfsm/vcfsm/services/renderer/internal/rendertest"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

const testdata = "../../testdata"

// loadBundle reads a bundle directory of testdata into a request bundle,
// with a digest made from the directory name.
func loadBundle(t testing.TB, name string) *commonv1.Bundle {
	t.Helper()
	return rendertest.LoadBundle(t, filepath.Join(testdata, "bundles", name), "sha256:test-"+name)
}

// bundleOf builds a bundle from literal files; package.yml gets a minimal
// Package document unless given.
func bundleOf(digest string, files map[string]string) *commonv1.Bundle {
	b := &commonv1.Bundle{Digest: digest}
	if _, ok := files[packageFile]; !ok {
		files[packageFile] = "apiVersion: packaging.carvel.dev/v1alpha1\nkind: Package\nspec: {}\n"
	}
	for p, c := range files {
		b.Files = append(b.Files, &commonv1.BundleFile{Path: p, Content: []byte(c)})
	}
	return b
}

func loadInventory(t testing.TB, name string) *commonv1.Inventory {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdata, "inventories", name))
	require.NoError(t, err)
	inv := &commonv1.Inventory{}
	require.NoError(t, protojson.Unmarshal(data, inv))
	return inv
}

func readTestdata(t testing.TB, parts ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(append([]string{testdata}, parts...)...))
	require.NoError(t, err)
	return data
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// golden compares got with testdata/golden/<name>, rewriting it with
// -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(testdata, "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file missing: run go test -run %s -update", t.Name())
	require.Equal(t, string(want), string(got), "output differs from %s (run with -update to accept)", path)
}

func newTestEngine(t testing.TB) *Engine {
	t.Helper()
	e, err := NewEngine(8)
	require.NoError(t, err)
	return e
}

func effective(t testing.TB, e *Engine, b *commonv1.Bundle, layers *rendererv1.ValueLayers, expanded bool) string {
	t.Helper()
	resp, err := e.RenderEffectiveValues(context.Background(), &rendererv1.RenderEffectiveValuesRequest{Bundle: b, Values: layers, Expanded: expanded})
	require.NoError(t, err)
	return string(resp.GetYaml())
}
