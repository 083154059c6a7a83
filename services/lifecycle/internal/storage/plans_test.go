package storage

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// A service keeps one stored plan: a new one replaces it, and it goes with
// the service.
func TestPlanOnePerServiceGoneWithIt(t *testing.T) {
	ctx := context.Background()
	r := openRepo(t, filepath.Join(t.TempDir(), "lifecycle.db"))
	svc := &lifecycle.Service{ID: lifecycle.IDPrefix + "p", Name: "p", CreatedAt: time.Now().UTC()}
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutService(svc) }))

	_, err := r.Plan(ctx, svc.ID)
	require.ErrorIs(t, err, lifecycle.ErrNotFound)

	put := func(id string) {
		p := &lifecycle.StoredPlan{ID: id, ServiceID: svc.ID, ToVersion: "2.0.0", Basis: lifecycle.PlanBasis{Catalog: "c", Service: map[string]string{"version": "v"}}}
		require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutPlan(p) }))
	}
	put("plan-1")
	put("plan-2")
	got, err := r.Plan(ctx, svc.ID)
	require.NoError(t, err)
	require.Equal(t, "plan-2", got.ID, "the latest replaces the one before")
	require.Equal(t, "v", got.Basis.Service["version"])

	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.DeleteService(svc.ID) }))
	_, err = r.Plan(ctx, svc.ID)
	require.ErrorIs(t, err, lifecycle.ErrNotFound, "deleted with its service")
}
