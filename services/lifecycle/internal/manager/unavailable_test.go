package manager_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/depot"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/manager"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/reads"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage/storagetest"
)

// A preview of a service whose bundle this replica holds nowhere (not
// locally, not shared, no source to fetch it again from) is Unavailable
// (503 at the edge), not an internal error.
func TestPreviewWithoutItsBundleIsUnavailable(t *testing.T) {
	ctx := context.Background()
	repo := storagetest.NewRepo(t)
	svc := &lifecycle.Service{ID: lifecycle.IDPrefix + "gone", Name: "gone", Version: "1.0.0", Status: lifecycle.StatusReady,
		Digest: "sha256:" + strings.Repeat("0", 64)}
	require.NoError(t, repo.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutService(svc) }))

	f, err := depot.NewFetcher(depot.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	m := manager.NewManager(manager.Config{}, repo, f, lifecycle.Peers{}, nil)
	_, err = m.RenderAccessGrants(ctx, svc.ID, lifecycle.RenderInput{})
	require.ErrorIs(t, err, lifecycle.ErrUnavailable)
	require.ErrorIs(t, err, bundle.ErrNotFound, "the cause stays in the message")
	require.Contains(t, err.Error(), svc.Digest)
	_, err = m.PreviewUpgrade(ctx, reads.PreviewRequest{ID: svc.ID, TargetVersion: "2.0.0"}, false, nil, "")
	require.ErrorIs(t, err, lifecycle.ErrUnavailable)
}
