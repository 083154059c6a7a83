package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
)

func TestEtcdAccessFlags(t *testing.T) {
	dir := t.TempDir()
	files, _, err := cli.EnsureDevTLS(filepath.Join(dir, "tls"))
	require.NoError(t, err)
	pw := filepath.Join(dir, "etcd-password")
	require.NoError(t, os.WriteFile(pw, []byte("s3cret\n"), 0o600))

	var cfg etcdstore.Config
	require.NoError(t, EtcdAccess{CA: files.CA, Cert: files.Cert, Key: files.Key, Username: "lifecycle", PasswordFile: pw}.apply(&cfg))
	require.NotNil(t, cfg.TLS)
	require.NotNil(t, cfg.TLS.RootCAs)
	require.Len(t, cfg.TLS.Certificates, 1)
	require.Equal(t, "lifecycle", cfg.Username)
	require.Equal(t, "s3cret", cfg.Password)

	require.NoError(t, EtcdAccess{}.apply(&etcdstore.Config{}), "no flags: plain, unauthenticated")
	require.ErrorContains(t, EtcdAccess{Username: "x"}.apply(&etcdstore.Config{}), "--etcd-username needs --etcd-password-file")
	require.ErrorContains(t, EtcdAccess{Cert: files.Cert}.apply(&etcdstore.Config{}), "--etcd-cert and --etcd-key go together")
	require.ErrorContains(t, EtcdAccess{CA: pw}.apply(&etcdstore.Config{}), "holds no PEM certificate")
	require.NoError(t, os.Chmod(pw, 0o644))
	require.ErrorContains(t, EtcdAccess{Username: "x", PasswordFile: pw}.apply(&etcdstore.Config{}), "mode 0644")
}
