package depot

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// tarOf is an uncompressed tar of regular files, in order.
func tarOf(t *testing.T, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o644, Size: int64(len(f[1])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(f[1]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func zipOf(t *testing.T, name, content string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create(name)
	require.NoError(t, err)
	_, err = w.Write([]byte(content))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.String()
}

// The layers searched for UI plugin manifests follow the bundle's own
// entry-name rule (one tar loop for both): a traversal or absolute name is
// a hostile archive there too, inside a plugin's zip as well. (The plugin
// scan used to clean such names and read on.)
func TestPluginScanFollowsTheEntryNameRule(t *testing.T) {
	manifest := `{"urn":"plugin"}`
	var direct, zipped pluginHit
	require.NoError(t, scanTar(t.Context(), bytes.NewReader(tarOf(t, [2]string{"plugin/manifest.json", manifest})), "l1", t.TempDir(), 1<<20, &direct, &zipped))
	require.JSONEq(t, manifest, string(direct.content), "a well-named manifest is found")

	for name, layer := range map[string][]byte{
		"traversal":        tarOf(t, [2]string{"../../manifest.json", manifest}),
		"absolute":         tarOf(t, [2]string{"/manifest.json", manifest}),
		"traversal in zip": tarOf(t, [2]string{"plugin.zip", zipOf(t, "../manifest.json", manifest)}),
	} {
		t.Run(name, func(t *testing.T) {
			var direct, zipped pluginHit
			err := scanTar(t.Context(), bytes.NewReader(layer), "l1", t.TempDir(), 1<<20, &direct, &zipped)
			require.ErrorIs(t, err, bundle.ErrHostile)
			require.Nil(t, direct.content)
			require.Nil(t, zipped.content)
		})
	}
}
