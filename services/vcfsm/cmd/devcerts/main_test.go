package main

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/seal"
)

func TestDevCertsCoverTheGivenHosts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	require.NoError(t, run([]string{"--dir", dir, "--hosts", "lifecycle,renderer,10.0.0.7"}))
	raw, err := os.ReadFile(filepath.Join(dir, "tls.crt"))
	require.NoError(t, err)
	block, _ := pem.Decode(raw)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	require.Equal(t, []string{"localhost", "lifecycle", "renderer"}, cert.DNSNames)
	require.NoError(t, cert.VerifyHostname("10.0.0.7"))

	caRaw, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caRaw))
	_, err = cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: "lifecycle", KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "valid as a client certificate too, signed by the CA")
	info, err := os.Stat(filepath.Join(dir, "tls.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// The keyring replicas share: written once, kept on the next run, and one
// the lifecycle service loads.
func TestDevCertsWriteOneSharedEncryptionKey(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	require.NoError(t, run([]string{"--dir", dir, "--encryption-key"}))
	path := filepath.Join(dir, "encryption-key")
	first, err := os.ReadFile(path)
	require.NoError(t, err)
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	keys, err := seal.LoadFile(path)
	require.NoError(t, err)
	require.NotEmpty(t, keys.Primary())

	require.NoError(t, run([]string{"--dir", dir, "--encryption-key"}))
	again, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, first, again, "a second run keeps the key every replica already uses")
}
