package storage

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/seal"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

func keyring(t *testing.T, lines ...string) *seal.Keyring {
	t.Helper()
	k, err := seal.Parse(strings.Join(lines, "\n"))
	require.NoError(t, err)
	return k
}

func keyLine(id string, b byte) string {
	return id + ":" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32))
}

// No value that can hold a secret reaches the store file in the clear: a
// service's value layers (its own and the previous version's) and every
// resource (a Secret's data, and the values rendered into other kinds)
// are sealed; the rest of a service record stays readable. A key rotation
// re-seals; a record plain from before is sealed when keys are turned on.
func TestSecretsSealedAtRest(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lifecycle.db")
	r := openRepo(t, path)
	overwrite := base64.StdEncoding.EncodeToString([]byte("password: hunter2-in-the-values\n"))
	previous := base64.StdEncoding.EncodeToString([]byte("password: hunter1-of-the-old-version\n"))
	svc := &lifecycle.Service{ID: lifecycle.IDPrefix + "a", Name: "visible-name", Status: lifecycle.StatusReady, CreatedAt: time.Now().UTC(),
		Values:          lifecycle.OverlayValues{UserOverwrite: overwrite, Effective: overwrite},
		PreviousVersion: &lifecycle.VersionRef{Version: "0.9.0", Values: lifecycle.OverlayValues{UserOverwrite: previous}}}
	secret := &lifecycle.Resource{ServiceID: svc.ID, ID: "Secret/sv/creds", Kind: "Secret",
		Doc: map[string]any{"kind": "Secret", "stringData": map[string]any{"password": "hunter2-the-password"}}}
	registry := &lifecycle.Resource{ServiceID: svc.ID, ID: "SupervisorRegistry/sv/x", Kind: "SupervisorRegistry",
		Doc: map[string]any{"spec": map[string]any{"password": "hunter3-inline"}}}
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error {
		if err := tx.PutService(svc); err != nil {
			return err
		}
		// Written before encryption was turned on: plain.
		return tx.PutResource(secret)
	}))

	r.SealSecrets(keyring(t, keyLine("k1", 1)))
	n, err := r.Reseal(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, n, "the plain service and Secret are sealed when encryption is turned on")
	n, err = r.Reseal(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left to re-seal")

	// A record written in the clear (no keys) makes the next start scan again.
	r.SealSecrets(nil)
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutResource(secret) }))
	r.SealSecrets(keyring(t, keyLine("k1", 1)))
	n, err = r.Reseal(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n, "the Secret written in the clear is sealed again")
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutResource(registry) }))

	res, err := r.Resources(ctx, svc.ID)
	require.NoError(t, err)
	require.Len(t, res, 2)
	for _, got := range res {
		if got.Kind == "Secret" {
			require.Equal(t, "hunter2-the-password", got.Doc["stringData"].(map[string]any)["password"])
		}
	}

	// Rotation: a new first key; the old one still opens until re-sealed.
	r.SealSecrets(keyring(t, keyLine("k2", 2), keyLine("k1", 1)))
	n, err = r.Reseal(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, n, "the service and both resources")
	r.SealSecrets(keyring(t, keyLine("k2", 2)))
	require.NoError(t, r.Refresh(ctx), "after re-sealing, the old key can go")
	got, err := r.Service(ctx, svc.ID)
	require.NoError(t, err)
	require.Equal(t, svc.Values, got.Values)
	require.Equal(t, svc.PreviousVersion.Values, got.PreviousVersion.Values)
	require.Equal(t, "0.9.0", got.PreviousVersion.Version)
	res, err = r.Resources(ctx, svc.ID)
	require.NoError(t, err)
	require.Len(t, res, 2)

	r.SealSecrets(nil)
	_, err = r.Resources(ctx, svc.ID)
	require.ErrorContains(t, err, "is encrypted at rest and no encryption key is configured (--encryption-key-file)")
	require.ErrorContains(t, r.Refresh(ctx), svc.ID+"|values is encrypted at rest and no encryption key is configured")

	require.NoError(t, r.s.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, secret := range []string{"hunter1", "hunter2", "hunter3", overwrite, previous} {
		require.NotContains(t, string(raw), secret, "the store file holds no secret in the clear")
	}
	require.Contains(t, string(raw), "visible-name", "the rest of a service record is plain")
}
