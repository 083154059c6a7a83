package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
)

// sharedEndpoint is the client URL of the one embedded etcd every test and
// benchmark of this package shares (each with its own key prefix). TestMain
// sets it once before any test runs.
var sharedEndpoint string

// prefixSeq makes every prefix unique within the process, also under -count.
var prefixSeq atomic.Int64

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "etcdstore-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	srv, err := startEtcd(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Close()
	sharedEndpoint = clientURL(srv)
	return m.Run()
}

// startEtcd starts a single-member etcd on 127.0.0.1 random ports.
func startEtcd(dir string) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "etcdstore-test"
	cfg.Dir = dir
	// Even "error" logs every listener closing at shutdown; failures to
	// start still surface through StartEtcd and Err.
	cfg.LogLevel = "fatal"
	loopback := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{loopback}
	cfg.AdvertiseClientUrls = []url.URL{loopback}
	cfg.ListenPeerUrls = []url.URL{loopback}
	cfg.AdvertisePeerUrls = []url.URL{loopback}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	srv, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("start embedded etcd: %w", err)
	}
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case <-srv.Server.ReadyNotify():
		return srv, nil
	case err := <-srv.Err():
		srv.Close()
		return nil, fmt.Errorf("embedded etcd failed: %w", err)
	case <-timer.C:
		srv.Close()
		return nil, errors.New("embedded etcd not ready within a minute")
	}
}

func clientURL(srv *embed.Etcd) string {
	return "http://" + srv.Clients[0].Addr().String()
}

func newPrefix() string {
	return fmt.Sprintf("/etcdstore-test/%d/", prefixSeq.Add(1))
}

// openAt opens a store on the shared etcd under prefix and closes it when
// the test ends.
func openAt(t testing.TB, prefix string, schema store.Schema) *etcdstore.Store {
	t.Helper()
	s, err := etcdstore.Open(context.Background(), etcdstore.Config{
		Endpoints: []string{sharedEndpoint},
		Prefix:    prefix,
	}, schema)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// rawClient talks to the shared etcd directly, to look at the key layout.
func rawClient(t testing.TB) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{sharedEndpoint}, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
