package boltstore_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/boltstore"
	"github.com/vcfsm/vcfsm/platform/store/storetest"
)

func TestContract(t *testing.T) {
	// Each subtest gets its own file; every open within a subtest reopens it.
	var mu sync.Mutex
	paths := map[*testing.T]string{}
	storetest.Run(t, func(t *testing.T, schema store.Schema) (store.Store, error) {
		mu.Lock()
		p, ok := paths[t]
		if !ok {
			p = filepath.Join(t.TempDir(), "vcfsm.db")
			paths[t] = p
		}
		mu.Unlock()
		return boltstore.Open(p, schema)
	})
}

// A second opener of the same file fails within a second, naming the file
// and saying another process holds it (issue 16 §7).
func TestSecondOpenerIsToldWhoHoldsTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lifecycle.db")
	schema := store.Schema{Version: 1, Buckets: []string{"b"}}
	first, err := boltstore.Open(path, schema)
	require.NoError(t, err)
	t.Cleanup(func() { _ = first.Close() })
	start := time.Now()
	_, err = boltstore.Open(path, schema)
	require.ErrorIs(t, err, boltstore.ErrLocked)
	require.ErrorContains(t, err, path+" is locked by another process")
	require.Less(t, time.Since(start), time.Second)
}

// Revision is the revision of the latest write, whichever key it wrote.
func TestRevisionIsTheLatestWrite(t *testing.T) {
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "vcfsm.db"), store.Schema{Version: 1, Buckets: []string{"a", "b"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.Zero(t, st.Revision())
	ctx := context.Background()
	r1, err := store.Put(ctx, st, "a", "x", []byte("1"), store.AnyRevision)
	require.NoError(t, err)
	require.Equal(t, r1, st.Revision())
	r2, err := store.Put(ctx, st, "b", "y", []byte("2"), store.AnyRevision)
	require.NoError(t, err)
	require.Greater(t, r2, r1)
	require.Equal(t, r2, st.Revision())
}

// The revision survives a reopen, and a failed transaction leaves it.
func TestRevisionAfterReopenAndFailedWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vcfsm.db")
	schema := store.Schema{Version: 1, Buckets: []string{"a"}}
	st, err := boltstore.Open(path, schema)
	require.NoError(t, err)
	ctx := context.Background()
	rev, err := store.Put(ctx, st, "a", "x", []byte("1"), store.AnyRevision)
	require.NoError(t, err)
	err = st.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.Put("a", "y", []byte("2"), store.AnyRevision); err != nil {
			return err
		}
		return errors.New("roll back")
	})
	require.ErrorContains(t, err, "roll back")
	require.Equal(t, rev, st.Revision(), "a rolled-back write is no revision")
	require.NoError(t, st.Close())
	require.Zero(t, st.Revision(), "closed")
	st, err = boltstore.Open(path, schema)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.Equal(t, rev, st.Revision())
}
