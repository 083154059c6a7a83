package storage

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// A package's catalog is read from memory after the first read, returned
// as copies, and follows every write.
func TestCatalogCache(t *testing.T) {
	ctx := context.Background()
	r := openRepo(t, filepath.Join(t.TempDir(), "lifecycle.db"))
	put := func(version string) {
		require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error {
			return tx.PutCatalog(&lifecycle.CatalogEntry{Name: "p", Version: version, Status: lifecycle.StatusReady})
		}))
	}
	put("1.0.0")
	got, err := r.Catalog(ctx, "p")
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Nil(t, got[0].Constraints, "an entry without recorded constraints says so")
	got[0].Version = "mutated"
	again, err := r.Catalog(ctx, "p")
	require.NoError(t, err)
	require.Equal(t, "1.0.0", again[0].Version, "Catalog returns copies")
	require.Positive(t, again[0].Revision)

	put("2.0.0")
	again, err = r.Catalog(ctx, "p")
	require.NoError(t, err)
	require.Len(t, again, 2, "a write drops the cached catalog")

	// A read that started before a write does not cache what it read.
	_, gen, hit := r.catalogs.get("q")
	require.False(t, hit)
	r.catalogs.drop("p")
	r.catalogs.put("q", gen, nil)
	_, _, hit = r.catalogs.get("q")
	require.False(t, hit, "a read older than a write is not cached")

	all, err := r.Catalog(ctx, "")
	require.NoError(t, err)
	require.Len(t, all, 2)

	// The constraints recorded at registration are read back as written.
	c := &lifecycle.Constraints{SupervisorVersion: ">=9.0.0", SourceUpgrade: ">=1.5.0"}
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error {
		return tx.PutCatalog(&lifecycle.CatalogEntry{Name: "p", Version: "3.0.0", Status: lifecycle.StatusReady, Constraints: c})
	}))
	got, err = r.Catalog(ctx, "p")
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, c, got[2].Constraints)
}
