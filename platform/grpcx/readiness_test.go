package grpcx_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/logging"
)

// A service with a readiness check is NOT_SERVING until it passes, follows
// it afterwards, and takes the server's overall status with it; services
// without a check stay SERVING.
func TestReadinessFollowsCheck(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	s := serve(t, grpcx.ServerConfig{Logger: logging.Discard(), ReadinessInterval: 20 * time.Millisecond}, func(srv *grpcx.Server) {
		testpb.RegisterTestServiceServer(srv, testService{})
		srv.SetReadiness("grpc.testing.TestService", func(context.Context) error {
			if down.Load() {
				return errors.New("store unreachable")
			}
			return nil
		})
	})
	conn, err := grpcx.Dial(s.addr, "")
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	health := healthpb.NewHealthClient(conn)
	get := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		resp, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: service})
		require.NoError(t, err)
		return resp.GetStatus()
	}
	wait := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for get("grpc.testing.TestService") != want {
			require.True(t, time.Now().Before(deadline), "still not %s", want)
			<-time.After(10 * time.Millisecond)
		}
		require.Equal(t, want, get(""), "the server's overall status")
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, get("grpc.health.v1.Health"), "no check: always serving")
	}
	wait(healthpb.HealthCheckResponse_NOT_SERVING)
	down.Store(false)
	wait(healthpb.HealthCheckResponse_SERVING)
	down.Store(true)
	wait(healthpb.HealthCheckResponse_NOT_SERVING)
}
