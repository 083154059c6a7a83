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
	require.Equal(t, secrets+1, n, "every Secret and the service's value layers")
	n, err = r.Reseal(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "all sealed by the primary key already")
	res, err := r.Resources(ctx, svc.ID)
	require.NoError(t, err)
	require.Len(t, res, secrets)
}

// Two replicas on one etcd: a version one registers shows in the other's
// catalog, although the other had read (and cached) the package's catalog
// before; its catalog generation moves with it.
func TestCatalogFollowsOtherReplicasOnEtcd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	endpoint := etcdtest.Start(t)
	open := func() *Repo {
		st, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{endpoint}, Prefix: "/catalog/"}, Schema)
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		r, err := NewRepo(ctx, st)
		require.NoError(t, err)
		return r
	}
	a, b := open(), open()
	followed := make(chan error, 1)
	go func() { followed <- a.Follow(ctx, func(string, *lifecycle.Service) {}) }()
	t.Cleanup(func() { cancel(); require.ErrorIs(t, <-followed, context.Canceled) })
	put := func(r *Repo, version string) {
		require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error {
			return tx.PutCatalog(&lifecycle.CatalogEntry{Name: "p", Version: version, Status: lifecycle.StatusReady})
		}))
	}
	put(a, "1.0.0")
	got, err := a.Catalog(ctx, "p")
	require.NoError(t, err)
	require.Len(t, got, 1)
	gen := a.CatalogGeneration()

	put(b, "2.0.0")
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err = a.Catalog(ctx, "p")
		require.NoError(t, err)
		// Both, in either order: a read that found the cache empty (its
		// first read raced its own write's event) sees 2.0.0 before the
		// event of b's write moves the generation.
		moved := a.CatalogGeneration() > gen
		if len(got) == 2 && moved {
			break
		}
		require.True(t, time.Now().Before(deadline), "10s after replica b registered 2.0.0, replica a shows %d version(s) of p; its catalog generation moved: %v", len(got), moved)
		<-time.After(20 * time.Millisecond)
	}
}
