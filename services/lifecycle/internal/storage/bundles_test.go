package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/boltstore"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore/etcdtest"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// A bundle archive put in the shared store reads back byte for byte on
// bbolt and on etcd (with etcd's default request and Txn limits), over
// several chunks; a corrupted chunk is refused naming the chunk, a missing
// one too, and an absent bundle is ErrBundleNotShared.
func TestSharedBundles(t *testing.T) {
	stores := map[string]func(t *testing.T) store.Store{
		"bolt": func(t *testing.T) store.Store {
			st, err := boltstore.Open(filepath.Join(t.TempDir(), "lifecycle.db"), Schema)
			require.NoError(t, err)
			return st
		},
		"etcd": func(t *testing.T) store.Store {
			st, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{etcdtest.Start(t)}, Prefix: "/bundles-test/"}, Schema)
			require.NoError(t, err)
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			t.Cleanup(func() { _ = st.Close() })
			sharedBundlesOn(t, st)
		})
	}
}

func sharedBundlesOn(t *testing.T, st store.Store) {
	ctx := context.Background()
	r, err := NewRepo(ctx, st)
	require.NoError(t, err)
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	archive := make([]byte, 2*bundleChunkSize+12345) // three chunks, the last one short
	_, err = rand.Read(archive)
	require.NoError(t, err)

	has, err := r.HasBundle(ctx, digest)
	require.NoError(t, err)
	require.False(t, has)
	_, err = r.OpenBundle(ctx, digest)
	require.ErrorIs(t, err, lifecycle.ErrBundleNotShared)

	put := func() {
		require.NoError(t, r.PutBundle(ctx, digest, func(w io.Writer) error {
			_, err := io.Copy(w, bytes.NewReader(archive)) // in 32 KiB writes
			return err
		}))
	}
	put()
	has, err = r.HasBundle(ctx, digest)
	require.NoError(t, err)
	require.True(t, has)
	read := func() ([]byte, error) {
		rd, err := r.OpenBundle(ctx, digest)
		require.NoError(t, err)
		return io.ReadAll(rd)
	}
	got, err := read()
	require.NoError(t, err)
	require.Equal(t, archive, got)

	chunk, err := st.Get(ctx, BucketBundles, chunkKey(digest, 1))
	require.NoError(t, err)
	require.Len(t, chunk.Value, bundleChunkSize)
	bad := bytes.Clone(chunk.Value)
	bad[100] ^= 0xff
	_, err = store.Put(ctx, st, BucketBundles, chunkKey(digest, 1), bad, store.AnyRevision)
	require.NoError(t, err)
	got, err = read()
	require.ErrorContains(t, err, "bundle "+digest+" in the shared store: chunk 2 of 3 is corrupt")
	require.Len(t, got, bundleChunkSize, "nothing of the corrupt chunk was returned")

	put() // sharing again replaces the corrupt copy
	got, err = read()
	require.NoError(t, err)
	require.Equal(t, archive, got)

	require.NoError(t, store.Delete(ctx, st, BucketBundles, chunkKey(digest, 2), store.AnyRevision))
	_, err = read()
	require.ErrorContains(t, err, "chunk 3 of 3 is missing")
}
