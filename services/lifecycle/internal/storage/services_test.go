package storage

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/store/boltstore"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

func openRepo(t *testing.T, path string) *Repo {
	t.Helper()
	st, err := boltstore.Open(path, Schema)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	r, err := NewRepo(context.Background(), st)
	require.NoError(t, err)
	return r
}

func TestRepo(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lifecycle.db")
	r := openRepo(t, path)
	require.True(t, r.UnboundedUpdates(), "bbolt takes any number of writes in one transaction")
	svc := &lifecycle.Service{ID: lifecycle.IDPrefix + "a", Name: "a", Status: lifecycle.StatusBusy, CreatedAt: time.Now().UTC()}
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutService(svc) }))
	require.Positive(t, svc.Revision)

	got, err := r.Service(ctx, svc.ID)
	require.NoError(t, err)
	require.Equal(t, "a", got.Name)
	got.Name = "mutated"
	again, _ := r.Service(ctx, svc.ID)
	require.Equal(t, "a", again.Name, "Service returns copies")

	// A failed transaction leaves store and cache untouched.
	boom := errors.New("boom")
	err = r.Update(ctx, func(tx lifecycle.Tx) error {
		s, _ := tx.Service(svc.ID)
		s.Name = "b"
		if err := tx.PutService(s); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	cached, _ := r.Service(ctx, svc.ID)
	require.Equal(t, "a", cached.Name)

	// A stale revision is a conflict.
	stale := svc.Clone()
	fresh := svc.Clone()
	fresh.Status = lifecycle.StatusReady
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutService(fresh) }))
	stale.Status = lifecycle.StatusUnhealthy
	err = r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutService(stale) })
	require.ErrorIs(t, err, lifecycle.ErrConflict)

	// Resources and operations; deleting a service keeps its history.
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error {
		if err := tx.PutResource(&lifecycle.Resource{ServiceID: svc.ID, ID: "GlobalRole//x", Kind: "GlobalRole"}); err != nil {
			return err
		}
		return tx.PutOperation(&lifecycle.Operation{ID: "0001", ServiceID: svc.ID, Type: lifecycle.OpRegister, Outcome: lifecycle.OutcomeRunning})
	}))
	res, err := r.Resources(ctx, svc.ID)
	require.NoError(t, err)
	require.Len(t, res, 1)
	unfinished, err := r.UnfinishedOperations(ctx)
	require.NoError(t, err)
	require.Len(t, unfinished, 1)
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.DeleteService(svc.ID) }))
	_, err = r.Service(ctx, svc.ID)
	require.ErrorIs(t, err, lifecycle.ErrNotFound)
	res, _ = r.Resources(ctx, svc.ID)
	require.Empty(t, res)
	ops, _ := r.Operations(ctx, svc.ID)
	require.Len(t, ops, 1, "history outlives the service")

	// Inventory round trip and reload from disk.
	inv := &lifecycle.Inventory{Regions: []lifecycle.Region{{Name: "us-west-1", Supervisors: []lifecycle.Supervisor{{Name: "sv1", ID: "domain-c8", Version: "9.0.0.0", KubernetesVersion: "v1.30.2+vmware.1"}}}}}
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutInventory(inv) }))
	got2, err := r.Inventory(ctx)
	require.NoError(t, err)
	require.Equal(t, "v1.30.2+vmware.1", got2.Regions[0].Supervisors[0].KubernetesVersion)
}

// SharedService hands out the stored snapshot without a copy; a write
// replaces the snapshot and leaves the one a reader holds as it was.
func TestSharedServiceIsASnapshot(t *testing.T) {
	ctx := context.Background()
	r := openRepo(t, filepath.Join(t.TempDir(), "lifecycle.db"))
	svc := &lifecycle.Service{ID: lifecycle.IDPrefix + "a", Name: "a", Status: lifecycle.StatusBusy}
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutService(svc) }))

	first, err := r.SharedService(ctx, svc.ID)
	require.NoError(t, err)
	again, err := r.SharedService(ctx, svc.ID)
	require.NoError(t, err)
	require.Same(t, first, again, "no copy per read")

	next := svc.Clone()
	next.Status = lifecycle.StatusReady
	require.NoError(t, r.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutService(next) }))
	require.Equal(t, lifecycle.StatusBusy, first.Status, "the snapshot a reader holds does not change under it")
	now, err := r.SharedService(ctx, svc.ID)
	require.NoError(t, err)
	require.Equal(t, lifecycle.StatusReady, now.Status)
	require.Equal(t, next.Revision, now.Revision)

	_, err = r.SharedService(ctx, lifecycle.IDPrefix+"missing")
	require.ErrorIs(t, err, lifecycle.ErrNotFound)
}
