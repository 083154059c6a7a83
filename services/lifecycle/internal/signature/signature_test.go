package signature

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

func TestLoadKeysNamesTheBadFile(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "vendor.pem")
	require.NoError(t, os.WriteFile(bad, []byte("not a key"), 0o600))
	_, err := LoadKeys([]string{bad})
	require.ErrorContains(t, err, "--signature-keys: "+bad)
	_, err = LoadKeys([]string{filepath.Join(t.TempDir(), "missing.pem")})
	require.ErrorContains(t, err, "--signature-keys:")
}

func TestWithoutKeysNothingVerifies(t *testing.T) {
	var v *Verifier
	require.False(t, v.Configured())
	b := &bundle.Bundle{Digest: "sha256:aa", Signatures: []bundle.Signature{{Digest: "sha256:aa", Tag: "sha256-aa.sig", Payloads: [][]byte{[]byte("{}")}}}}
	res := v.Verify(b)
	require.Len(t, res, 1)
	require.False(t, res[0].Verified)
	require.Equal(t, "no --signature-keys configured: the signer is not verified", res[0].Reason)
	require.EqualError(t, v.Check(&bundle.Bundle{Digest: "sha256:bb"}), "the bundle carries no cosign signature for its digest sha256:bb")
}
