package grpcx_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/logging"
)

const testServiceName = "grpc.testing.TestService"

// countingService counts the calls one instance answered.
type countingService struct {
	testpb.UnimplementedTestServiceServer
	calls *atomic.Int64
}

func (s countingService) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	s.calls.Add(1)
	return &testpb.Empty{}, nil
}

// instance is one running server of the test service.
type instance struct {
	addr  string
	calls atomic.Int64
	down  atomic.Bool // its readiness check fails: health NOT_SERVING
	stop  func()
}

func startInstance(t *testing.T) *instance {
	t.Helper()
	in := &instance{}
	srv := grpcx.NewServer(grpcx.ServerConfig{Logger: logging.Discard(), ReadinessInterval: 10 * time.Millisecond})
	testpb.RegisterTestServiceServer(srv, countingService{calls: &in.calls})
	srv.SetReadiness(testServiceName, func(context.Context) error {
		if in.down.Load() {
			return errors.New("down for the test")
		}
		return nil
	})
	srv.MarkServing()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	in.addr = lis.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, time.Second) }()
	stopped := false
	in.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			require.NoError(t, <-done)
		}
	}
	t.Cleanup(in.stop)
	return in
}

// Two instances behind one balanced connection: calls reach both; one
// reporting NOT_SERVING, then one stopped, gets no calls while every call
// keeps succeeding; back up, it gets calls again.
func TestDialServiceBalancesOverHealthyInstances(t *testing.T) {
	a, b := startInstance(t), startInstance(t)
	conn, err := grpcx.DialService(a.addr+","+b.addr, testServiceName, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	client := testpb.NewTestServiceClient(conn)
	call := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := client.EmptyCall(ctx, &testpb.Empty{})
		require.NoError(t, err, "a call failed although one instance was healthy")
	}
	// untilOnly calls until a run of 20 calls reaches only want (the
	// client has seen the other's health change), failing any call.
	untilOnly := func(want, other *instance) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			before := other.calls.Load()
			for range 20 {
				call()
			}
			if other.calls.Load() == before {
				return
			}
			require.True(t, time.Now().Before(deadline), "%s still gets calls", other.addr)
		}
	}
	untilBoth := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		a0, b0 := a.calls.Load(), b.calls.Load()
		for a.calls.Load() == a0 || b.calls.Load() == b0 {
			call()
			require.True(t, time.Now().Before(deadline), "calls do not reach both instances: %d and %d", a.calls.Load()-a0, b.calls.Load()-b0)
		}
	}

	untilBoth()

	b.down.Store(true)
	untilOnly(a, b)
	bBefore := b.calls.Load()
	for range 50 {
		call()
	}
	require.Equal(t, bBefore, b.calls.Load(), "an instance reporting NOT_SERVING got calls")

	b.down.Store(false)
	untilBoth()

	a.stop()
	aBefore := a.calls.Load()
	for range 50 {
		call()
	}
	require.Equal(t, aBefore, a.calls.Load())
	require.Positive(t, b.calls.Load()-bBefore)
}

func TestDialServiceRefusesBadLists(t *testing.T) {
	_, err := grpcx.DialService("127.0.0.1:1,dns:///x:2", testServiceName, "")
	require.ErrorContains(t, err, "host:port entries")
	_, err = grpcx.DialService(" , ", testServiceName, "")
	require.ErrorContains(t, err, "no address")
}
