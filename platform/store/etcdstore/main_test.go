package etcdstore_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore/etcdtest"
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
	srv, err := etcdtest.StartIn(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Close()
	sharedEndpoint = etcdtest.ClientURL(srv)
	return m.Run()
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
