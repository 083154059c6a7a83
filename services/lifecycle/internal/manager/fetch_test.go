package manager

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
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

	f, err := bundle.NewFetcher(bundle.Config{Dir: t.TempDir(), AllowInsecure: true})
	require.NoError(t, err)
	m := NewManager(Config{}, nil, f, lifecycle.Peers{}, nil)
	source := "http://" + ln.Addr().String() + "/missing.tar"
	require.NoError(t, m.ValidateSource(source))

	r := &run{op: &lifecycle.Operation{ID: "op", ServiceID: lifecycle.IDPrefix + "none", Type: lifecycle.OpRegister}}
	_, err = steps.Fetch(context.Background(), m.Bundles, m, r.op, source)
	require.Error(t, err)
	require.True(t, IsBlocked(err), "a missing bundle is not retried: %v", err)
	require.Equal(t, 1, strings.Count(err.Error(), source), "the source appears once: %v", err)

	strict, err := bundle.NewFetcher(bundle.Config{Dir: t.TempDir()})
	require.NoError(t, err)
	err = NewManager(Config{}, nil, strict, lifecycle.Peers{}, nil).ValidateSource(source)
	require.ErrorIs(t, err, lifecycle.ErrInvalidArgument)
	require.Contains(t, err.Error(), "--allow-insecure-sources")
}
