package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func envOf(m map[string]string) Env { return func(k string) string { return m[k] } }

func TestSaveLoadIsPrivate(t *testing.T) {
	dir := t.TempDir()
	path, err := Path(envOf(map[string]string{"XDG_CONFIG_HOME": dir}))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "vcfctl", "config.yaml"), path)
	f := &File{Current: "a", Contexts: map[string]Context{"a": {Server: "https://a:8080", Token: "t"}}}
	require.NoError(t, f.Save(path))
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	got, err := Load(path)
	require.NoError(t, err)
	require.Equal(t, f, got)

	home, err := Path(envOf(map[string]string{"HOME": dir}))
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, ".config", "vcfctl", "config.yaml"), home)
	_, err = Path(envOf(nil))
	require.ErrorContains(t, err, "XDG_CONFIG_HOME")
}

func TestLoadRejectsUnknownFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte("contexts:\n  a:\n    sever: x\n"), 0o600))
	_, err := Load(path)
	require.ErrorContains(t, err, "sever")
}

func TestResolveOrder(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "tok")
	require.NoError(t, os.WriteFile(tokenFile, []byte("from-file\n"), 0o600))
	f := &File{Current: "a", Contexts: map[string]Context{
		"a": {Server: "http://a", Token: "ta"},
		"b": {Server: "http://b", TokenFile: tokenFile, CAFile: "/ca.pem"},
	}}
	r, err := Resolve(f, "", envOf(nil))
	require.NoError(t, err)
	require.Equal(t, Resolved{Name: "a", Server: "http://a", Token: "ta", TokenSource: "the token stored in the context"}, r)

	r, err = Resolve(f, "", envOf(map[string]string{"VCFCTL_CONTEXT": "b"}))
	require.NoError(t, err)
	require.Equal(t, Resolved{Name: "b", Server: "http://b", Token: "from-file", CAFile: "/ca.pem", TokenSource: "token file " + tokenFile}, r)

	r, err = Resolve(f, "a", envOf(map[string]string{"VCFCTL_CONTEXT": "b", "VCFCTL_SERVER": "http://x", "VCFCTL_TOKEN": "tx"}))
	require.NoError(t, err, "the flag wins over VCFCTL_CONTEXT; server and token variables override the context")
	require.Equal(t, Resolved{Name: "a", Server: "http://x", Token: "tx", TokenSource: "VCFCTL_TOKEN"}, r)

	require.NoError(t, os.Remove(tokenFile))
	r, err = Resolve(f, "b", envOf(map[string]string{"VCFCTL_TOKEN": "tx"}))
	require.NoError(t, err, "VCFCTL_TOKEN replaces the context's token file, which is not read")
	require.Equal(t, "VCFCTL_TOKEN", r.TokenSource)

	_, err = Resolve(f, "nope", envOf(nil))
	require.ErrorContains(t, err, `context "nope" does not exist (known: a, b)`)

	r, err = Resolve(&File{}, "", envOf(map[string]string{"VCFCTL_SERVER": "http://env", "VCFCTL_TOKEN": "t"}))
	require.NoError(t, err, "the environment alone is enough")
	require.Equal(t, "http://env", r.Server)
	_, err = Resolve(&File{}, "", envOf(nil))
	require.ErrorContains(t, err, "no server")
}

func TestDefaultName(t *testing.T) {
	require.Equal(t, "127.0.0.1:8080", DefaultName("http://127.0.0.1:8080/"))
	require.Equal(t, "weird", DefaultName("weird"))
}
