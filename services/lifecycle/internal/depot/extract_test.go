package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
)

func TestCleanEntryName(t *testing.T) {
	tests := []struct {
		name   string
		want   string
		errMsg string
	}{
		{"package.yml", "package.yml", ""},
		{"./package.yml", "package.yml", ""},
		{"config/", "config", ""},
		{"config//values.yml", "config/values.yml", ""},
		{".", ".", ""},
		{"./", ".", ""},
		{".imgpkg/images.yml", ".imgpkg/images.yml", ""},
		{"config/..values.yml", "config/..values.yml", ""},
		{"", "", "empty"},
		{"/etc/passwd", "", "absolute"},
		{"../x", "", "traversal"},
		{"config/../../x", "", "traversal"},
		{"config/..", "", "traversal"},
		{"..", "", "traversal"},
		{`config\..\..\x`, "", "backslash"},
		{"config/\x00x", "", "NUL"},
		{strings.Repeat("a/", maxEntryPathDepth) + "x", "", "deeper than"},
		{strings.Repeat("a", maxEntryPathLen+1), "", "longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cleanEntryName(tc.name)
			if tc.errMsg != "" {
				require.ErrorContains(t, err, tc.errMsg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

var testLimits = Limits{MaxDownloadBytes: 1 << 20, MaxBundleBytes: 16 << 10, MaxFiles: 20, MaxFileBytes: 4 << 10}

func extractEntries(t *testing.T, dir string, layer []byte) error {
	t.Helper()
	x, err := newExtractor(dir, testLimits)
	require.NoError(t, err)
	defer func() { _ = x.Close() }()
	return x.extractTar(context.Background(), bytes.NewReader(layer), "test-layer")
}

func TestExtractTarWritesRegularFilesAndDirectories(t *testing.T) {
	dir := t.TempDir()
	layer := bundletest.LayerTar(t, []bundletest.Entry{
		{Name: "./", Type: tar.TypeDir},
		{Name: "config/", Type: tar.TypeDir},
		{Name: "config/", Type: tar.TypeDir}, // listed twice: harmless
		{Name: "./package.yml", Body: []byte("kind: Package\n")},
		{Name: "deep/er/file.yml", Body: []byte("x: 1\n")}, // parents without entries
		{Name: "empty.yml"},
	})
	require.NoError(t, extractEntries(t, dir, layer))
	got := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			got[filepath.ToSlash(rel)+"/"] = ""
			return nil
		}
		require.True(t, d.Type().IsRegular())
		b, err := os.ReadFile(p)
		got[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	require.Equal(t, map[string]string{
		"./": "", "config/": "", "deep/": "", "deep/er/": "",
		"package.yml": "kind: Package\n", "deep/er/file.yml": "x: 1\n", "empty.yml": "",
	}, got)
}

// TestExtractTarLimits: every limit stops the extraction at the entry that
// crosses it.
func TestExtractTarLimits(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, int(testLimits.MaxFileBytes)+1)
	tests := []struct {
		name    string
		entries []bundletest.Entry
		errMsg  string
	}{
		{"one file over MaxFileBytes", []bundletest.Entry{{Name: "big", Body: big}}, "MaxFileBytes"},
		{"files over MaxBundleBytes", func() []bundletest.Entry {
			var es []bundletest.Entry
			for i := 0; i < 5; i++ {
				es = append(es, bundletest.Entry{Name: "f" + string(rune('a'+i)), Body: big[:testLimits.MaxFileBytes]})
			}
			return es
		}(), "MaxBundleBytes"},
		{"files over MaxFiles", func() []bundletest.Entry {
			var es []bundletest.Entry
			for i := 0; i <= testLimits.MaxFiles; i++ {
				es = append(es, bundletest.Entry{Name: "d/" + strings.Repeat("f", i+1)})
			}
			return es
		}(), "MaxFiles"},
		{"directories over MaxFiles", func() []bundletest.Entry {
			var es []bundletest.Entry
			for i := 0; i <= testLimits.MaxFiles; i++ {
				es = append(es, bundletest.Entry{Name: strings.Repeat("d", i+1) + "/", Type: tar.TypeDir})
			}
			return es
		}(), "directories"},
		{"implicit directories over MaxFiles", []bundletest.Entry{{Name: strings.Repeat("d/", testLimits.MaxFiles+1) + "f"}}, "directories"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := extractEntries(t, t.TempDir(), bundletest.LayerTar(t, tc.entries))
			require.ErrorIs(t, err, bundle.ErrHostile)
			require.ErrorContains(t, err, tc.errMsg)
		})
	}
}

func TestDecompressLayer(t *testing.T) {
	plain := bundletest.LayerTar(t, []bundletest.Entry{{Name: "a.yml", Body: []byte("a: 1\n")}})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, err := zw.Write(plain)
	require.NoError(t, err)
	require.NoError(t, zw.Close())

	for name, layer := range map[string][]byte{"plain": plain, "gzip": gz.Bytes()} {
		t.Run(name, func(t *testing.T) {
			r, closeFn, err := decompressLayer(bytes.NewReader(layer), "l")
			require.NoError(t, err)
			got, err := io.ReadAll(r)
			require.NoError(t, err)
			require.NoError(t, closeFn())
			require.Equal(t, plain, got)
		})
	}
	t.Run("zstd is refused", func(t *testing.T) {
		_, _, err := decompressLayer(bytes.NewReader([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0}), "l")
		require.ErrorIs(t, err, bundle.ErrHostile)
		require.ErrorContains(t, err, "zstd")
	})
}

func TestBoundedReader(t *testing.T) {
	r := &boundedReader{ctx: context.Background(), r: bytes.NewReader(make([]byte, 11)), limit: 10, what: "the thing"}
	_, err := io.ReadAll(r)
	require.ErrorIs(t, err, bundle.ErrHostile)
	require.ErrorContains(t, err, "the thing exceeds 10 bytes")

	r = &boundedReader{ctx: context.Background(), r: bytes.NewReader(make([]byte, 10)), limit: 10}
	b, err := io.ReadAll(r)
	require.NoError(t, err)
	require.Len(t, b, 10)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = &boundedReader{ctx: ctx, r: bytes.NewReader(make([]byte, 10)), limit: 10}
	_, err = io.ReadAll(r)
	require.ErrorIs(t, err, context.Canceled)
}

// FuzzExtractTar: whatever the archive, the extractor never panics, never
// creates anything but regular files and directories, and never writes
// outside its root.
func FuzzExtractTar(f *testing.F) {
	seed := func(entries ...bundletest.Entry) []byte { return bundletest.LayerTar(f, entries) }
	f.Add(seed(bundletest.ValidEntries()...))
	f.Add(seed(bundletest.Entry{Name: "../x", Body: []byte("x")}))
	f.Add(seed(bundletest.Entry{Name: "l", Type: tar.TypeSymlink, Linkname: "/"}, bundletest.Entry{Name: "l/x", Body: []byte("x")}))
	f.Add(seed(bundletest.Entry{Name: "a", Body: []byte("x")}, bundletest.Entry{Name: "a/b", Body: []byte("x")}))
	f.Add([]byte("not a tar at all"))
	f.Fuzz(func(t *testing.T, layer []byte) {
		parent := t.TempDir()
		root := filepath.Join(parent, "root")
		require.NoError(t, os.Mkdir(root, 0o750))
		x, err := newExtractor(root, testLimits)
		require.NoError(t, err)
		_ = x.extractTar(context.Background(), bytes.NewReader(layer), "fuzz")
		require.NoError(t, x.Close())
		entries, err := os.ReadDir(parent)
		require.NoError(t, err)
		require.Len(t, entries, 1, "nothing written next to the root")
		var total int64
		require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			require.NoError(t, err)
			require.True(t, d.IsDir() || d.Type().IsRegular(), "%s is neither a file nor a directory", p)
			if !d.IsDir() {
				info, err := d.Info()
				require.NoError(t, err)
				total += info.Size()
			}
			return nil
		}))
		require.LessOrEqual(t, total, testLimits.MaxBundleBytes)
	})
}
