package bundletest

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	sigstore "github.com/sigstore/sigstore/pkg/signature"
	"github.com/stretchr/testify/require"
)

// SignWithKey pushes a real cosign signature image into <reg>/<repo>, as
// `cosign sign --key` does: a simple-signing payload naming payloadDigest,
// signed by signer, tagged for tagDigest (sha256-<hex>.sig). A payload
// digest other than the tag's is what a signature moved onto a tampered
// bundle looks like.
func SignWithKey(t testing.TB, reg *Registry, repo, tagDigest, payloadDigest string, signer sigstore.Signer) {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]any{"docker-reference": reg.Ref(repo)},
			"image":    map[string]any{"docker-manifest-digest": payloadDigest},
			"type":     "cosign container image signature",
		},
		"optional": nil,
	})
	require.NoError(t, err)
	sig, err := signer.SignMessage(bytes.NewReader(payload))
	require.NoError(t, err)
	img, err := mutate.Append(mutate.MediaType(empty.Image, types.OCIManifestSchema1), mutate.Addendum{
		Layer:       static.NewLayer(payload, types.MediaType(CosignPayloadType)),
		Annotations: map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)},
	})
	require.NoError(t, err)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	PushImage(t, reg, repo+":sha256-"+strings.TrimPrefix(tagDigest, "sha256:")+".sig", img)
}

// NewSigningKey generates an ECDSA P-256 key pair, writes the public key
// as PEM to dir/<name>.pem (what --signature-keys takes) and returns the
// signer and that path.
func NewSigningKey(t testing.TB, dir, name string) (sigstore.Signer, string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	signer, err := sigstore.LoadECDSASignerVerifier(priv, crypto.SHA256)
	require.NoError(t, err)
	pemBytes, err := cryptoutils.MarshalPublicKeyToPEM(priv.Public())
	require.NoError(t, err)
	path := filepath.Join(dir, name+".pem")
	require.NoError(t, os.WriteFile(path, pemBytes, 0o600))
	return signer, path
}
