package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/vcfsm/vcfsm/platform/cli"
)

// serveHealth serves gRPC health on loopback with opts until the test ends.
func serveHealth(t *testing.T, opts ...grpc.ServerOption) (*health.Server, string) {
	srv := grpc.NewServer(opts...)
	h := health.NewServer()
	healthpb.RegisterHealthServer(srv, h)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return h, lis.Addr().String()
}

func TestProbeGRPC(t *testing.T) {
	h, addr := serveHealth(t)

	h.SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	require.NoError(t, run([]string{"grpc", addr, "svc"}))
	require.NoError(t, run([]string{"grpc", addr}), "the server as a whole")
	h.SetServingStatus("svc", healthpb.HealthCheckResponse_NOT_SERVING)
	require.ErrorContains(t, run([]string{"grpc", addr, "svc"}), "NOT_SERVING")
	require.ErrorContains(t, run([]string{"grpc", addr, "unknown"}), "NotFound")
}

func TestProbeHTTP(t *testing.T) {
	var down atomic.Bool
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(hs.Close)
	require.NoError(t, run([]string{"http", hs.URL + "/readyz"}))
	down.Store(true)
	require.ErrorContains(t, run([]string{"http", hs.URL + "/readyz"}), "503")
	require.ErrorContains(t, run(nil), "usage")
	down.Store(false)
	require.NoError(t, probeHTTP(context.Background(), hs.URL+"/readyz"))
}

// A service serving mTLS refuses a plain probe; the probe presents the
// container's own certificate from VCFSM_GRPC_TLS_* and is answered.
func TestProbeGRPCWithMTLS(t *testing.T) {
	files, _, err := cli.EnsureDevTLS(t.TempDir())
	require.NoError(t, err)
	tlsCfg := cli.GRPCTLS{Cert: files.Cert, Key: files.Key, CA: files.CA}
	creds, err := tlsCfg.ServerCreds()
	require.NoError(t, err)
	_, addr := serveHealth(t, grpc.Creds(creds))

	t.Setenv("VCFSM_GRPC_TLS_CERT", "")
	t.Setenv("VCFSM_GRPC_TLS_KEY", "")
	t.Setenv("VCFSM_GRPC_TLS_CA", "")
	require.Error(t, run([]string{"grpc", addr}), "a plain probe against an mTLS server")

	t.Setenv("VCFSM_GRPC_TLS_CERT", files.Cert)
	t.Setenv("VCFSM_GRPC_TLS_KEY", files.Key)
	t.Setenv("VCFSM_GRPC_TLS_CA", files.CA)
	require.NoError(t, run([]string{"grpc", addr}))

	t.Setenv("VCFSM_GRPC_TLS_KEY", "")
	require.ErrorContains(t, run([]string{"grpc", addr}), "VCFSM_GRPC_TLS_")
}
