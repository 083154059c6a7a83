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

// Rendered Secret data never reaches the store file in the clear; a key
// rotation re-seals on start; other resources stay readable plain JSON.
func TestSecretsSealedAtRest(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lifecycle.db")
	r := openRepo(t, path)
	svc := &lifecycle.Service{ID: lifecycle.IDPrefix + "a", Name: "a", Status: lifecycle.StatusReady, CreatedAt: time.Now().UTC()}
	secret := &lifecycle.Resource{ServiceID: svc.ID, ID: "Secret/sv/creds", Kind: "Secret",
		Doc: map[string]any{"kind": "Secret", "stringData": map[string]any{"password": "hunter2-the-password"}}}
	role := &lifecycle.Resource{ServiceID: svc.ID, ID: "GlobalRole//x", Kind: "GlobalRole", Doc: map[string]any{"name": "visible-role"}}
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
	require.Equal(t, 1, n, "the plain Secret is sealed when encryption is turned on")
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutResource(role) }))

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
	require.Equal(t, 1, n)
	r.SealSecrets(keyring(t, keyLine("k2", 2)))
	res, err = r.Resources(ctx, svc.ID)
	require.NoError(t, err, "after re-sealing, the old key can go")
	require.Len(t, res, 2)

	r.SealSecrets(nil)
	_, err = r.Resources(ctx, svc.ID)
	require.ErrorContains(t, err, "is encrypted at rest and no encryption key is configured (--encryption-key-file)")

	require.NoError(t, r.s.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "hunter2-the-password", "the store file holds no Secret in the clear")
	require.Contains(t, string(raw), "visible-role", "other resources are plain")
}
