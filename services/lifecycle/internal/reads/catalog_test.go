package reads_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/reads"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage/storagetest"
)

// The catalog orders pre-releases by semver precedence: 1.0.0-alpha.10 is
// newer than 1.0.0-alpha.2 (numeric identifiers compare as numbers), and
// the release is newer than both.
func TestAvailableUpgradeOrdersPreReleases(t *testing.T) {
	ctx := context.Background()
	repo := storagetest.NewRepo(t)
	m := reads.New(reads.Deps{Repo: repo, Now: time.Now})
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	put := func(versions ...string) {
		t.Helper()
		require.NoError(t, repo.Update(ctx, func(tx lifecycle.Tx) error {
			for _, v := range versions {
				if err := tx.PutCatalog(&lifecycle.CatalogEntry{Name: "arcturus.galaxy.com", Version: v, Source: "https://depot.test/" + v + ".tar",
					Digest: "sha256:" + v, Status: lifecycle.StatusReady, RegisteredAt: at}); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	svc := &lifecycle.Service{Name: "arcturus.galaxy.com", Version: "1.0.0-alpha.2"}
	put("1.0.0-alpha.1", "1.0.0-alpha.2", "1.0.0-alpha.10", "1.0.0-alpha.9")
	next, err := m.AvailableUpgrade(ctx, svc)
	require.NoError(t, err)
	require.NotNil(t, next)
	require.Equal(t, "1.0.0-alpha.10", next.Version, "alpha.10 sorts after alpha.2 and alpha.9")
	// The answer is kept until the catalog changes; each caller gets its own.
	next.Version = "mutated"
	again, err := m.AvailableUpgrade(ctx, svc)
	require.NoError(t, err)
	require.Equal(t, "1.0.0-alpha.10", again.Version, "a caller's change does not reach the kept answer")

	put("1.0.0")
	next, err = m.AvailableUpgrade(ctx, svc)
	require.NoError(t, err)
	require.Equal(t, "1.0.0", next.Version, "a release is newer than its pre-releases")

	// A version that stops being installable stops being offered.
	require.NoError(t, repo.Update(ctx, func(tx lifecycle.Tx) error {
		return tx.PutCatalog(&lifecycle.CatalogEntry{Name: "arcturus.galaxy.com", Version: "1.0.0", Source: "https://depot.test/1.0.0.tar",
			Status: lifecycle.StatusUnresolved, RegisteredAt: at})
	}))
	next, err = m.AvailableUpgrade(ctx, svc)
	require.NoError(t, err)
	require.Equal(t, "1.0.0-alpha.10", next.Version, "1.0.0 is Unresolved: the newest Ready one again")
	put("1.0.0")

	svc.Version = "1.0.0"
	next, err = m.AvailableUpgrade(ctx, svc)
	require.NoError(t, err)
	require.Nil(t, next, "no version newer than 1.0.0 is registered")
}
