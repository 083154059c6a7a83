// Package etcdtest starts a real, single-member embedded etcd
// (go.etcd.io/etcd/server/v3/embed) on 127.0.0.1 random ports for tests of
// code that runs on etcd. It is the server etcdstore's own tests use, with
// etcd's default limits (--max-txn-ops 128), so a test on it meets the
// limits a deployment meets.
package etcdtest

import (
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Start starts an embedded etcd with its data in a temporary directory and
// stops it when the test ends. It returns the client URL.
func Start(tb testing.TB) string {
	tb.Helper()
	srv, err := StartIn(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(srv.Close)
	return ClientURL(srv)
}

// StartIn starts an embedded etcd with its data in dir; the caller closes
// it. For TestMain, where there is no testing.TB.
func StartIn(dir string) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = "etcdtest"
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

// ClientURL is the URL clients reach srv at.
func ClientURL(srv *embed.Etcd) string {
	return "http://" + srv.Clients[0].Addr().String()
}
