// Package storagetest gives tests a lifecycle repository on a real bbolt
// file of their own.
package storagetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/store/boltstore"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage"
)

// NewRepo opens an empty repository in the test's temporary directory,
// closed when the test ends.
func NewRepo(tb testing.TB) *storage.Repo {
	tb.Helper()
	st, err := boltstore.Open(filepath.Join(tb.TempDir(), "lifecycle.db"), storage.Schema)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = st.Close() })
	repo, err := storage.NewRepo(context.Background(), st)
	require.NoError(tb, err)
	return repo
}
