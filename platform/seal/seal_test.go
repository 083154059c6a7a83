package seal

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func key(b byte) string {
	return base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string(rune(b)), 32)))
}

func TestSealOpenAndRotate(t *testing.T) {
	old, err := Parse("k1:" + key('a'))
	require.NoError(t, err)
	sealed, err := old.Seal([]byte(`{"password":"hunter2"}`), []byte("svc|Secret/a"))
	require.NoError(t, err)
	require.True(t, IsSealed(sealed))
	require.NotContains(t, string(sealed), "hunter2")

	_, _, err = old.Open(sealed, []byte("svc|Secret/b"))
	require.ErrorContains(t, err, `key "k1" cannot open it`, "bound to its record key")

	rotated, err := Parse("# new first\nk2:" + key('b') + "\nk1:" + key('a'))
	require.NoError(t, err)
	require.Equal(t, "k2", rotated.Primary())
	plain, id, err := rotated.Open(sealed, []byte("svc|Secret/a"))
	require.NoError(t, err)
	require.Equal(t, "k1", id)
	require.JSONEq(t, `{"password":"hunter2"}`, string(plain))

	onlyNew, err := Parse("k2:" + key('b'))
	require.NoError(t, err)
	_, _, err = onlyNew.Open(sealed, []byte("svc|Secret/a"))
	require.ErrorContains(t, err, `key "k1" is not in the keyring`)

	_, err = Parse("k1:c2hvcnQ=")
	require.ErrorContains(t, err, "want 32 bytes")
}

func TestDevKeyFile(t *testing.T) {
	dir := t.TempDir()
	path, created, err := EnsureDevKey(dir)
	require.NoError(t, err)
	require.True(t, created)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	k, err := LoadFile(path)
	require.NoError(t, err)
	require.Equal(t, "dev-1", k.Primary())
	_, created, err = EnsureDevKey(dir)
	require.NoError(t, err)
	require.False(t, created)

	loose := filepath.Join(dir, "loose")
	require.NoError(t, os.WriteFile(loose, []byte("k:"+key('a')), 0o644))
	_, err = LoadFile(loose)
	require.ErrorContains(t, err, "mode 0644")
}
