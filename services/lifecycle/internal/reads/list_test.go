package reads_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/reads"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage/storagetest"
)

func listManager(t testing.TB, n int) (*reads.Reader, lifecycle.Repository) {
	t.Helper()
	ctx := context.Background()
	repo := storagetest.NewRepo(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	states := []string{lifecycle.StateActive, lifecycle.StateInactive, lifecycle.StatePaused}
	statuses := []string{lifecycle.StatusHealthy, lifecycle.StatusBusy, lifecycle.StatusUnhealthy, lifecycle.StatusReady}
	err := repo.Update(ctx, func(tx lifecycle.Tx) error {
		for i := range n {
			name := fmt.Sprintf("svc%05d.example.com", i)
			if i%10 == 0 {
				name = fmt.Sprintf("arcturus%05d.galaxy.com", i)
			}
			s := &lifecycle.Service{
				ID: fmt.Sprintf("%s%08d-0000-0000-0000-000000000000", lifecycle.IDPrefix, i), Name: name,
				Vendor: []string{"broadcom", "vmware"}[i%2], Version: fmt.Sprintf("1.%d.0", i%12),
				LifecycleState: states[i%3], Status: statuses[i%4], CreatedAt: base.Add(time.Duration(i) * time.Second),
				Labels: map[string]string{"team": []string{"platform", "data"}[i%2]},
			}
			if err := tx.PutService(s); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	return reads.New(reads.Deps{Repo: repo, Now: time.Now}), repo
}

func ptr[T any](v T) *T { return &v }

func TestList(t *testing.T) {
	m, _ := listManager(t, 100)
	ctx := context.Background()
	cases := []struct {
		name      string
		q         reads.ListQuery
		total     int
		pageCount int
		first     string
		count     int
	}{
		{"defaults", reads.ListQuery{}, 100, 4, "arcturus00000.galaxy.com", 25},
		{"page 2 of 10", reads.ListQuery{Page: 2, PageSize: ptr(10)}, 100, 10, "arcturus00010.galaxy.com", 10},
		{"past the end", reads.ListQuery{Page: 9, PageSize: ptr(25)}, 100, 4, "", 0},
		{"pageSize 0 counts only", reads.ListQuery{PageSize: ptr(0)}, 100, 0, "", 0},
		{"api.md lifecycleState==active", reads.ListQuery{Filter: "lifecycleState==active", PageSize: ptr(128)}, 34, 1, "arcturus00000.galaxy.com", 34},
		{"api.md vendor==broadcom;status==Healthy", reads.ListQuery{Filter: "vendor==broadcom;status==Healthy", PageSize: ptr(128)}, 25, 1, "arcturus00000.galaxy.com", 25},
		{"api.md name==*arcturus*", reads.ListQuery{Filter: "name==*arcturus*"}, 10, 1, "arcturus00000.galaxy.com", 10},
		{"status in any case, as --until", reads.ListQuery{Filter: "vendor==broadcom;status==HEALTHY", PageSize: ptr(128)}, 25, 1, "arcturus00000.galaxy.com", 25},
		{"lifecycleState in any case", reads.ListQuery{Filter: "lifecycleState==Active", PageSize: ptr(128)}, 34, 1, "arcturus00000.galaxy.com", 34},
		{"status != in any case", reads.ListQuery{Filter: "status!=healthy;status!=BUSY;status!=unhealthy", PageSize: ptr(128)}, 25, 1, "svc00003.example.com", 25},
		{"labels", reads.ListQuery{Filter: "labels.team==data;name==*arcturus*"}, 0, 0, "", 0},
		{"sortDesc name", reads.ListQuery{SortDesc: "name", PageSize: ptr(1)}, 100, 100, "svc00099.example.com", 1},
		{"sortAsc version numerically", reads.ListQuery{Filter: "version=ge=1.10.0", SortAsc: "version", PageSize: ptr(1)}, 16, 16, "arcturus00010.galaxy.com", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := m.List(ctx, c.q)
			require.NoError(t, err)
			require.Equal(t, c.total, res.Total)
			require.Equal(t, c.pageCount, res.PageCount)
			require.Len(t, res.Services, c.count)
			if c.first != "" {
				require.Equal(t, c.first, res.Services[0].Name)
			}
		})
	}
}

// With no services (the memo's first snapshot is empty too), a list is
// an empty page, again and again.
func TestListNoServices(t *testing.T) {
	m, _ := listManager(t, 0)
	for range 2 {
		res, err := m.List(context.Background(), reads.ListQuery{Filter: "status==Healthy"})
		require.NoError(t, err)
		require.Zero(t, res.Total)
		require.Empty(t, res.Services)
	}
}

func TestListErrors(t *testing.T) {
	m, _ := listManager(t, 3)
	for name, q := range map[string]reads.ListQuery{
		"pageSize 129":    {PageSize: ptr(129)},
		"pageSize -1":     {PageSize: ptr(-1)},
		"page -1":         {Page: -1},
		"bad filter":      {Filter: "status=="},
		"unknown field":   {Filter: "colour==red"},
		"unknown sort":    {SortAsc: "colour"},
		"both sort flags": {SortAsc: "name", SortDesc: "name"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := m.List(context.Background(), q)
			require.ErrorIs(t, err, lifecycle.ErrInvalidArgument)
		})
	}
}

// A filter's matches are kept for the services as they are: a change to
// a service shows in the next list, and pages sorted differently from the
// same filter do not disturb each other.
func TestListFollowsChanges(t *testing.T) {
	m, repo := listManager(t, 400)
	ctx := context.Background()
	q := reads.ListQuery{Filter: "labels.team==data", PageSize: ptr(128)}
	res, err := m.List(ctx, q)
	require.NoError(t, err)
	require.Equal(t, 200, res.Total)

	names := func(q reads.ListQuery) []string {
		t.Helper()
		res, err := m.List(ctx, q)
		require.NoError(t, err)
		var out []string
		for _, s := range res.Services {
			out = append(out, s.Name)
		}
		return out
	}
	require.Equal(t, []string{"svc00399.example.com", "svc00397.example.com"}, names(reads.ListQuery{Filter: q.Filter, PageSize: ptr(2), SortDesc: "name"}))
	require.Equal(t, []string{"svc00001.example.com", "svc00003.example.com"}, names(reads.ListQuery{Filter: q.Filter, PageSize: ptr(2), SortAsc: "name"}))
	// A deeper page than the kept order reaches, then the first one again.
	require.Equal(t, []string{"svc00055.example.com", "svc00057.example.com", "svc00059.example.com"}, names(reads.ListQuery{Filter: q.Filter, Page: 10, PageSize: ptr(3), SortAsc: "name"}))
	require.Equal(t, []string{"svc00001.example.com", "svc00003.example.com"}, names(reads.ListQuery{Filter: q.Filter, PageSize: ptr(2), SortAsc: "name"}))

	id := res.Services[0].ID
	require.NoError(t, repo.Update(ctx, func(tx lifecycle.Tx) error {
		svc, err := tx.Service(id)
		if err != nil {
			return err
		}
		svc.Labels = map[string]string{"team": "platform"}
		return tx.PutService(svc)
	}))
	res, err = m.List(ctx, q)
	require.NoError(t, err)
	require.Equal(t, 199, res.Total, "the relabelled service no longer matches")
	for _, s := range res.Services {
		require.NotEqual(t, id, s.ID)
	}
}

// After any mix of changes, deletions and new services, a list the memo
// moves forward shows what a list computed afresh shows, page by page.
func TestListFollowsAnyChange(t *testing.T) {
	m, repo := listManager(t, 300)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	queries := []reads.ListQuery{
		{Filter: "vendor==broadcom;status==Healthy,labels.team==data", SortDesc: "name", Page: 2, PageSize: ptr(25)},
		{Filter: "lifecycleState==active", PageSize: ptr(128)},
		{SortAsc: "version", Page: 3, PageSize: ptr(10)},
		{PageSize: ptr(0)},
	}
	statuses := []string{lifecycle.StatusHealthy, lifecycle.StatusBusy, lifecycle.StatusUnhealthy}
	next := 300
	for round := range 30 {
		all := repo.Services(ctx)
		require.NoError(t, repo.Update(ctx, func(tx lifecycle.Tx) error {
			for range 1 + rng.IntN(8) {
				s := all[rng.IntN(len(all))].Clone()
				switch rng.IntN(4) {
				case 0:
					if err := tx.DeleteService(s.ID); err != nil && !errors.Is(err, lifecycle.ErrNotFound) {
						return err
					}
					continue
				case 1:
					s.LifecycleState = lifecycle.StateDecommissioned
				default:
					s.Status, s.Labels = statuses[rng.IntN(3)], map[string]string{"team": []string{"data", "platform"}[rng.IntN(2)]}
				}
				if err := tx.PutService(s); err != nil && !errors.Is(err, lifecycle.ErrConflict) {
					return err
				}
			}
			next++
			return tx.PutService(&lifecycle.Service{ID: fmt.Sprintf("%s%08d-0000-0000-0000-000000000000", lifecycle.IDPrefix, next),
				Name: fmt.Sprintf("new%05d", next), Vendor: "broadcom", Version: "1.0.0", Status: lifecycle.StatusHealthy,
				LifecycleState: lifecycle.StateActive, CreatedAt: time.Date(2026, 2, 1, 0, 0, next, 0, time.UTC)})
		}))
		fresh := reads.New(reads.Deps{Repo: repo, Now: time.Now})
		for _, q := range queries {
			got, err := m.List(ctx, q)
			require.NoError(t, err)
			want, err := fresh.List(ctx, q)
			require.NoError(t, err)
			require.Equal(t, want.Total, got.Total, "round %d %+v", round, q)
			require.Equal(t, want.Services, got.Services, "round %d %+v", round, q)
		}
	}
}

// List with a FIQL filter over 10,000 services, page of 25: the same list
// again (its matches are kept) and after a change to one service (only
// that service is matched again; the matches are sorted again).
func BenchmarkListFilter10k(b *testing.B) {
	m, repo := listManager(b, 10000)
	ctx := context.Background()
	q := reads.ListQuery{Filter: "vendor==broadcom;status==Healthy,name==*arcturus*", Page: 3, PageSize: ptr(25), SortDesc: "name"}
	list := func(b *testing.B) {
		if _, err := m.List(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("unchanged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			list(b)
		}
	})
	b.Run("after-change", func(b *testing.B) {
		id := repo.Services(ctx)[0].ID
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			b.StopTimer()
			require.NoError(b, repo.Update(ctx, func(tx lifecycle.Tx) error {
				svc, err := tx.Service(id)
				if err != nil {
					return err
				}
				svc.Labels = map[string]string{"team": "data", "n": fmt.Sprint(i)}
				return tx.PutService(svc)
			}))
			b.StartTimer()
			list(b)
		}
	})
}
