package ops

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/commit"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/depot"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage/storagetest"
)

// A failed download names the source once ("fetch URL: …", not "fetch
// URL: fetch URL: …") and is a final DownloadTask failure; the source rule
// is the fetcher's own (http:// only with AllowInsecure, configured once).
func TestFetchErrorNamesTheSourceOnce(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.NotFoundHandler()}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	f, err := depot.NewFetcher(depot.Config{Dir: t.TempDir(), AllowInsecure: true})
	require.NoError(t, err)
	source := "http://" + ln.Addr().String() + "/missing.tar"
	require.NoError(t, lifecycle.ValidateSource(f, source))

	repo := storagetest.NewRepo(t)
	w := commit.New(commit.Deps{Repo: repo, Listener: nopListener{}, Now: time.Now})
	r := &run{op: &lifecycle.Operation{ID: "op", ServiceID: lifecycle.IDPrefix + "none", Type: lifecycle.OpRegister}}
	_, err = steps.Fetch(context.Background(), f, w, r.op, source)
	require.Error(t, err)
	require.False(t, retryable(err), "a missing bundle is not retried: %v", err)
	var blocked *lifecycle.BlockedError
	require.ErrorAs(t, err, &blocked)
	require.Equal(t, 1, strings.Count(err.Error(), source), "the source appears once: %v", err)

	strict, err := depot.NewFetcher(depot.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	err = lifecycle.ValidateSource(strict, source)
	require.ErrorIs(t, err, lifecycle.ErrInvalidArgument)
	require.Contains(t, err.Error(), "--allow-insecure-sources")
}

type nopListener struct{}

func (nopListener) ServiceChanged(*lifecycle.Service) {}
func (nopListener) ServiceDeleted(string)             {}
