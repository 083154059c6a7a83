package storage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore/etcdtest"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Re-sealing a service with more Secrets than etcd takes in one
// transaction (128 operations by default) goes in batches.
func TestResealManySecretsOnEtcd(t *testing.T) {
	ctx := context.Background()
	st, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{etcdtest.Start(t)}, Prefix: "/reseal/"}, Schema)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	r, err := NewRepo(ctx, st)
	require.NoError(t, err)
	require.False(t, r.UnboundedUpdates(), "etcd bounds the writes of a transaction")
	svc := &lifecycle.Service{ID: lifecycle.IDPrefix + "many", Name: "many", Status: lifecycle.StatusReady, CreatedAt: time.Now().UTC()}
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutService(svc) }))
	const secrets = 250
	for start := 0; start < secrets; start += 50 {
		require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error {
			for i := start; i < start+50; i++ {
				if err := tx.PutResource(&lifecycle.Resource{ServiceID: svc.ID, ID: fmt.Sprintf("Secret/sv/s%03d", i), Kind: "Secret",
					Doc: map[string]any{"kind": "Secret", "stringData": map[string]any{"n": i}}}); err != nil {
					return err
				}
			}
			return nil
		}))
	}

	r.SealSecrets(keyring(t, keyLine("k1", 1)))
	n, err := r.Reseal(ctx)
	require.NoError(t, err)
	require.Equal(t, secrets, n)
	n, err = r.Reseal(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "all sealed by the primary key already")
	res, err := r.Resources(ctx, svc.ID)
	require.NoError(t, err)
	require.Len(t, res, secrets)
}
