package vcfsm_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/server/v3/embed"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/logging"
	compatibility "github.com/vcfsm/vcfsm/services/compatibility/app"
	lifecycle "github.com/vcfsm/vcfsm/services/lifecycle/app"
	precheck "github.com/vcfsm/vcfsm/services/precheck/app"
	renderer "github.com/vcfsm/vcfsm/services/renderer/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// startEtcd runs a single-member etcd in dir on the given 127.0.0.1
// addresses ("127.0.0.1:0" picks a port) until stop is called or the test
// ends.
func startEtcd(t testing.TB, dir, clientAddr, peerAddr string) (srv *embed.Etcd, stop func()) {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Name = "readiness"
	cfg.Dir = dir
	cfg.LogLevel = "fatal"
	client, peer := url.URL{Scheme: "http", Host: clientAddr}, url.URL{Scheme: "http", Host: peerAddr}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	srv, err := embed.StartEtcd(cfg)
	require.NoError(t, err)
	var once sync.Once
	stop = func() { once.Do(srv.Close) } // Close twice panics
	t.Cleanup(stop)
	select {
	case <-srv.Server.ReadyNotify():
	case err := <-srv.Err():
		t.Fatalf("embedded etcd failed: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("embedded etcd not ready within a minute")
	}
	return srv, stop
}

// Readiness follows the store: the lifecycle service's gRPC health and the
// gateway's /readyz go NOT_SERVING while etcd is down and come back when
// it does; /healthz (liveness) stays 200 throughout.
func TestReadinessFollowsTheStore(t *testing.T) {
	dir := t.TempDir()
	etcd, stopEtcd := startEtcd(t, dir, "127.0.0.1:0", "127.0.0.1:0")
	clientAddr, peerAddr := etcd.Clients[0].Addr().String(), etcd.Peers[0].Addr().String()
	w := newWorld(t, func(c *app.Config) {
		c.Lifecycle.Store = "etcd"
		c.Lifecycle.EtcdEndpoints = "http://" + clientAddr
		c.Lifecycle.EtcdPrefix = "/readiness-test/"
	})
	conn, err := grpcx.Dial(w.box.GRPCAddr, "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	health := healthpb.NewHealthClient(conn)
	status := func(service string) healthpb.HealthCheckResponse_ServingStatus {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		require.NoError(t, err)
		return resp.GetStatus()
	}
	lifecycleName := lifecyclev1.LifecycleService_ServiceDesc.ServiceName
	expect := func(want healthpb.HealthCheckResponse_ServingStatus, readyz int) {
		t.Helper()
		poll(t, fmt.Sprintf("lifecycle %s", want), 30*time.Second, func() healthpb.HealthCheckResponse_ServingStatus {
			return status(lifecycleName)
		}, func(s healthpb.HealthCheckResponse_ServingStatus) bool { return s == want })
		require.Equal(t, want, status(""), "the server as a whole follows its services")
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, status("vcfservices.precheck.v1.PrecheckService"), "precheck needs no store")
		require.Equal(t, readyz, w.box.Do(t, http.MethodGet, "/readyz", nil).Status)
		require.Equal(t, http.StatusOK, w.box.Do(t, http.MethodGet, "/healthz", nil).Status)
	}

	expect(healthpb.HealthCheckResponse_SERVING, http.StatusOK)
	stopEtcd()
	expect(healthpb.HealthCheckResponse_NOT_SERVING, http.StatusServiceUnavailable)
	startEtcd(t, dir, clientAddr, peerAddr)
	expect(healthpb.HealthCheckResponse_SERVING, http.StatusOK)
}

// servePeers serves compatibility, renderer (in-process) and precheck on
// addr until stop is called or the test ends.
func servePeers(t testing.TB, addr string) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := logging.Discard()
	comp, err := compatibility.New(ctx, compatibility.Config{}, log)
	require.NoError(t, err)
	rend, err := renderer.New(ctx, renderer.Config{Isolation: renderer.IsolationInProcess}, log)
	require.NoError(t, err)
	pre, err := precheck.New(ctx, precheck.Config{}, log)
	require.NoError(t, err)
	srv := grpcx.NewServer(grpcx.ServerConfig{Logger: log})
	comp.Register(srv)
	rend.Register(srv)
	pre.Register(srv)
	srv.MarkServing()
	lis, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, time.Second) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(stop)
	return stop
}

// Readiness follows the peers: lifecycle is NOT_SERVING while the
// services it needs are down, SERVING again once they are back.
func TestReadinessFollowsPeers(t *testing.T) {
	peersAddr := freeAddr(t)
	stopPeers := servePeers(t, peersAddr)
	ctx, cancel := context.WithCancel(context.Background())
	life, err := lifecycle.New(ctx, lifecycle.Config{DataDir: t.TempDir(),
		CompatibilityAddr: peersAddr, RendererAddr: peersAddr, PrecheckAddr: peersAddr}, logging.Discard())
	require.NoError(t, err)
	srv := grpcx.NewServer(grpcx.ServerConfig{Logger: logging.Discard(), ReadinessInterval: 100 * time.Millisecond})
	life.Register(srv)
	srv.MarkServing()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, time.Second) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, life.Close())
	})
	conn, err := grpcx.Dial(lis.Addr().String(), "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	health := healthpb.NewHealthClient(conn)
	wait := func(want healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		poll(t, want.String(), 30*time.Second, func() healthpb.HealthCheckResponse_ServingStatus {
			resp, err := health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: lifecyclev1.LifecycleService_ServiceDesc.ServiceName})
			require.NoError(t, err)
			return resp.GetStatus()
		}, func(s healthpb.HealthCheckResponse_ServingStatus) bool { return s == want })
	}

	wait(healthpb.HealthCheckResponse_SERVING)
	stopPeers()
	wait(healthpb.HealthCheckResponse_NOT_SERVING)
	servePeers(t, peersAddr)
	wait(healthpb.HealthCheckResponse_SERVING)
}
