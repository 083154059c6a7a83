// Package rendertest holds the renderer's test helpers: one loader of
// test bundles for every package's tests.
package rendertest

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
)

// LoadBundle reads the bundle tree at root (every regular file, with
// forward-slash paths relative to root) as the renderer receives it, under
// the given digest.
func LoadBundle(t testing.TB, root, digest string) *commonv1.Bundle {
	t.Helper()
	b := &commonv1.Bundle{Digest: digest}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		b.Files = append(b.Files, &commonv1.BundleFile{Path: filepath.ToSlash(rel), Content: data})
		return nil
	})
	require.NoError(t, err)
	return b
}
