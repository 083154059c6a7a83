package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/manager"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage/storagetest"
)

// countingRepo counts the reads the read model should share per page.
type countingRepo struct {
	lifecycle.Repository
	inventory, catalog atomic.Int32
	catalogErr         error
}

func (r *countingRepo) Inventory(ctx context.Context) (*lifecycle.Inventory, error) {
	r.inventory.Add(1)
	return r.Repository.Inventory(ctx)
}

func (r *countingRepo) Catalog(ctx context.Context, name string) ([]*lifecycle.CatalogEntry, error) {
	r.catalog.Add(1)
	if r.catalogErr != nil {
		return nil, r.catalogErr
	}
	return r.Repository.Catalog(ctx, name)
}

// CatalogGeneration passes the repository's on: without it every row
// would read its catalog.
func (r *countingRepo) CatalogGeneration() uint64 {
	return r.Repository.(lifecycle.CatalogGenerations).CatalogGeneration()
}

func readModelHandler(t *testing.T) (*Handler, *countingRepo) {
	t.Helper()
	ctx := context.Background()
	repo := storagetest.NewRepo(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, repo.Update(ctx, func(tx lifecycle.Tx) error {
		for i := range 20 {
			s := &lifecycle.Service{
				ID:   fmt.Sprintf("%s%08d-0000-0000-0000-000000000000", lifecycle.IDPrefix, i),
				Name: fmt.Sprintf("svc%d.example.com", i%3), Version: "1.0.0",
				LifecycleState: lifecycle.StateActive, Status: lifecycle.StatusHealthy, CreatedAt: base.Add(time.Duration(i) * time.Second),
			}
			if err := tx.PutService(s); err != nil {
				return err
			}
		}
		for _, v := range []string{"1.0.0-alpha.2", "1.0.0", "1.0.1-alpha.2", "1.0.1-alpha.10"} {
			if err := tx.PutCatalog(&lifecycle.CatalogEntry{Name: "svc0.example.com", Version: v, Digest: "sha256:" + v,
				Status: lifecycle.StatusReady, RegisteredAt: base}); err != nil {
				return err
			}
		}
		return tx.PutInventory(&lifecycle.Inventory{})
	}))
	counting := &countingRepo{Repository: repo}
	return NewHandler(manager.NewManager(manager.Config{}, counting, nil, lifecycle.Peers{}, nil)), counting
}

// A list page reads the inventory once and each service name's catalog
// once, however many rows it has; the next page reads no catalog until
// one changes.
func TestListPageReadsSharedDataOnce(t *testing.T) {
	h, repo := readModelHandler(t)
	size := int32(20)
	res, err := h.ListServices(context.Background(), &lifecyclev1.ListServicesRequest{PageSize: &size, Inventory: true})
	require.NoError(t, err)
	require.Len(t, res.GetValues(), 20)
	require.EqualValues(t, 1, repo.inventory.Load(), "one inventory read for the page")
	require.EqualValues(t, 3, repo.catalog.Load(), "one catalog read per service name (3 names)")
	for _, v := range res.GetValues() {
		require.NotNil(t, v.GetInventory())
		if v.GetName() == "svc0.example.com" {
			require.Equal(t, "1.0.1-alpha.10", v.GetAvailableUpgrade(), "pre-releases ordered by semver precedence")
		} else {
			require.Empty(t, v.GetAvailableUpgrade())
		}
	}

	_, err = h.ListServices(context.Background(), &lifecyclev1.ListServicesRequest{PageSize: &size})
	require.NoError(t, err)
	require.EqualValues(t, 3, repo.catalog.Load(), "the catalog has not changed: the upgrades are known")
	require.NoError(t, repo.Update(context.Background(), func(tx lifecycle.Tx) error {
		return tx.PutCatalog(&lifecycle.CatalogEntry{Name: "svc1.example.com", Version: "2.0.0", Digest: "sha256:2.0.0",
			Status: lifecycle.StatusReady, RegisteredAt: time.Now()})
	}))
	res, err = h.ListServices(context.Background(), &lifecyclev1.ListServicesRequest{PageSize: &size})
	require.NoError(t, err)
	require.EqualValues(t, 6, repo.catalog.Load(), "a catalog write: each name read again")
	for _, v := range res.GetValues() {
		if v.GetName() == "svc1.example.com" {
			require.Equal(t, "2.0.0", v.GetAvailableUpgrade())
		}
	}
}

// A catalog that cannot be read fails the request instead of showing no
// available upgrade.
func TestCatalogReadErrorIsSurfaced(t *testing.T) {
	h, repo := readModelHandler(t)
	repo.catalogErr = errors.New("store unreachable")
	_, err := h.GetService(context.Background(), &lifecyclev1.GetServiceRequest{Id: fmt.Sprintf("%s%08d-0000-0000-0000-000000000000", lifecycle.IDPrefix, 0)})
	require.ErrorContains(t, err, "store unreachable")
	require.ErrorContains(t, err, "available upgrade")
}
