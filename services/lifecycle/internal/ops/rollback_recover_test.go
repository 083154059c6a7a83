package ops

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/commit"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage/storagetest"
)

// The recovery of a stuck rollout quarantines its version unless it
// already is: an earlier quarantine (an administrator's, an automatic
// upgrade's) keeps its reason; a version no longer registered is left
// alone (the recovery still goes on).
func TestQuarantineIfNotKeepsAnEarlierQuarantine(t *testing.T) {
	ctx := context.Background()
	repo := storagetest.NewRepo(t)
	w := commit.New(commit.Deps{Repo: repo, Listener: nopListener{}, Now: time.Now})
	earlier := &lifecycle.Quarantine{Reason: "a known bad build", By: "admin"}
	require.NoError(t, w.Update(ctx, func(tx lifecycle.Tx) error {
		if err := tx.PutCatalog(&lifecycle.CatalogEntry{Name: "n", Version: "1.0.0"}); err != nil {
			return err
		}
		return tx.PutCatalog(&lifecycle.CatalogEntry{Name: "n", Version: "2.0.0", Quarantine: earlier})
	}))

	recovered := &lifecycle.Quarantine{Reason: "recovered from stuck rollout r", Rollout: "r"}
	require.NoError(t, w.Update(ctx, func(tx lifecycle.Tx) error {
		for _, v := range []string{"1.0.0", "2.0.0", "3.0.0"} {
			if err := quarantineIfNot(tx, "n", v, recovered); err != nil {
				return err
			}
		}
		return nil
	}))

	entries, err := repo.Catalog(ctx, "n")
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range entries {
		require.NotNil(t, e.Quarantine, "%s", e.Version)
		got[e.Version] = e.Quarantine.Reason
	}
	require.Equal(t, map[string]string{"1.0.0": "recovered from stuck rollout r", "2.0.0": "a known bad build"}, got)
}
