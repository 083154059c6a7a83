package storage

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Services after writes: the written services in their places, the new
// ones added, the deleted ones gone, everyone else where they were, and
// the slice a reader held before unchanged.
func TestServicesKeepTheirPositions(t *testing.T) {
	ctx := context.Background()
	r := openRepo(t, filepath.Join(t.TempDir(), "lifecycle.db"))
	id := func(i int) string { return fmt.Sprintf("%s%08d-0000-0000-0000-000000000000", lifecycle.IDPrefix, i) }
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error {
		for i := range 20 {
			if err := tx.PutService(&lifecycle.Service{ID: id(i), Name: fmt.Sprint(i), Status: lifecycle.StatusReady}); err != nil {
				return err
			}
		}
		return nil
	}))
	before := r.Services(ctx)
	require.Len(t, before, 20)
	require.Same(t, &before[0], &r.Services(ctx)[0], "no copy while nothing changed")
	held := append([]*lifecycle.Service(nil), before...)

	changed, deleted := before[3].Clone(), before[7].ID
	changed.Status = lifecycle.StatusHealthy
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error {
		if err := tx.PutService(changed); err != nil {
			return err
		}
		if err := tx.DeleteService(deleted); err != nil {
			return err
		}
		return tx.PutService(&lifecycle.Service{ID: id(20), Name: "20", Status: lifecycle.StatusReady})
	}))
	after := r.Services(ctx)
	require.Equal(t, held, before, "the slice a reader held is not changed under it")
	require.Len(t, after, 20, "one deleted, one added")

	moved := 0
	seen := map[string]bool{}
	for i, s := range after {
		seen[s.ID] = true
		if i < len(before) && s != before[i] {
			moved++
		}
	}
	require.False(t, seen[deleted], "the deleted service is gone")
	require.True(t, seen[id(20)], "the new one is there")
	require.Equal(t, lifecycle.StatusHealthy, after[3].Status, "the changed service is in its place")
	require.LessOrEqual(t, moved, 3, "only the changed, the deleted one's place and the new one's differ")

	// A reload rebuilds it from the store: the same services.
	require.NoError(t, r.Refresh(ctx))
	reloaded := r.Services(ctx)
	require.Len(t, reloaded, 20)
	for _, s := range reloaded {
		require.True(t, seen[s.ID], "%s", s.ID)
	}
}
