package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore/etcdtest"
)

// Replicas starting together on data at schema version 1 migrate it once.
func TestConcurrentOpenersMigrateOnce(t *testing.T) {
	ctx := context.Background()
	prefix := newPrefix()
	v1 := store.Schema{Version: 1, Buckets: []string{"services"}}
	s := openAt(t, prefix, v1)
	_, err := store.Put(ctx, s, "services", "a", []byte("v1"), store.MustNotExist)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	var runs atomic.Int32
	v3 := store.Schema{
		Version: 3,
		Buckets: []string{"services"},
		Migrations: []store.Migration{
			func(tx store.Tx) error { return appendValue(tx, &runs, "+m1") },
			func(tx store.Tx) error { return appendValue(tx, &runs, "+m2") },
		},
	}
	const openers = 4
	stores := make(chan *etcdstore.Store, openers)
	errs := make(chan error, openers)
	for range openers {
		go func() {
			s, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{sharedEndpoint}, Prefix: prefix}, v3)
			if err != nil {
				errs <- err
				return
			}
			stores <- s
		}()
	}
	for range openers {
		select {
		case err := <-errs:
			require.NoError(t, err)
		case s := <-stores:
			t.Cleanup(func() { _ = s.Close() })
		}
	}
	reopened := openAt(t, prefix, v3)
	rec, err := reopened.Get(ctx, "services", "a")
	require.NoError(t, err)
	require.Equal(t, "v1+m1+m2", string(rec.Value), "each migration is applied exactly once")
	require.GreaterOrEqual(t, runs.Load(), int32(2))

	resp, err := rawClient(t).Get(ctx, prefix+"_meta/schema_version")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	require.Equal(t, "3", string(resp.Kvs[0].Value))
}

func appendValue(tx store.Tx, runs *atomic.Int32, suffix string) error {
	runs.Add(1)
	rec, err := tx.Get("services", "a")
	if err != nil {
		return err
	}
	_, err = tx.Put("services", "a", append(rec.Value, suffix...), rec.Revision)
	return err
}

func TestKeyLayout(t *testing.T) {
	ctx := context.Background()
	base := newPrefix()
	// A prefix without the trailing slash gets one, so "/x" and "/x2" stay apart.
	s := openAt(t, strings.TrimSuffix(base, "/"), schema)
	sibling := openAt(t, strings.TrimSuffix(base, "/")+"2", schema)
	rev, err := store.Put(ctx, s, "services", "svc/a", []byte("hello"), store.MustNotExist)
	require.NoError(t, err)
	_, err = store.Put(ctx, sibling, "services", "svc/b", []byte("other"), store.MustNotExist)
	require.NoError(t, err)

	raw := rawClient(t)
	resp, err := raw.Get(ctx, base+"services/svc/a")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	kv := resp.Kvs[0]
	require.Equal(t, "hello", string(kv.Value[8:]), "the value follows an 8-byte revision header")
	require.LessOrEqual(t, rev, kv.ModRevision, "the store revision is at most etcd's ModRevision")

	resp, err = raw.Get(ctx, base+"_meta/schema_version")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
	require.Equal(t, "1", string(resp.Kvs[0].Value))

	recs, err := s.List(ctx, "services", "")
	require.NoError(t, err)
	require.Equal(t, "svc/a=hello", describe(recs), "a sibling prefix must not leak into this store")

	// Deleting writes the bucket's delete marker that guards List ranges.
	require.NoError(t, store.Delete(ctx, s, "services", "svc/a", rev))
	resp, err = raw.Get(ctx, base+"_meta/deletes/services")
	require.NoError(t, err)
	require.Len(t, resp.Kvs, 1)
}

func TestCorruptRecordIsAnError(t *testing.T) {
	ctx := context.Background()
	prefix := newPrefix()
	s := openAt(t, prefix, schema)
	// Written by hand (etcdctl put), without the revision header.
	_, err := rawClient(t).Put(ctx, prefix+"services/bad", "abc")
	require.NoError(t, err)

	_, err = s.Get(ctx, "services", "bad")
	require.ErrorContains(t, err, `record "bad" is corrupt`)
	_, err = s.List(ctx, "services", "")
	require.ErrorContains(t, err, "corrupt")
	err = s.Update(ctx, func(tx store.Tx) error {
		_, err := tx.Put("services", "bad", []byte("x"), store.AnyRevision)
		return err
	})
	require.ErrorContains(t, err, "corrupt")
}

func TestTooManyWritesInOneUpdate(t *testing.T) {
	ctx := context.Background()
	s := openAt(t, newPrefix(), schema)
	// The embedded etcd runs with the default --max-txn-ops of 128.
	err := s.Update(ctx, func(tx store.Tx) error {
		for i := range 200 {
			if _, err := tx.Put("services", fmt.Sprintf("k%03d", i), []byte("v"), store.AnyRevision); err != nil {
				return err
			}
		}
		return nil
	})
	require.ErrorContains(t, err, "--max-txn-ops")
	recs, err := s.List(ctx, "services", "")
	require.NoError(t, err)
	require.Empty(t, recs, "a refused commit writes nothing")
}

func TestOpenRejectsBadConfig(t *testing.T) {
	ok := store.Schema{Version: 1, Buckets: []string{"services"}}
	cases := []struct {
		name    string
		cfg     etcdstore.Config
		schema  store.Schema
		wantErr string
	}{
		{"no endpoints", etcdstore.Config{}, ok, "no etcd endpoints"},
		{"schema version 0", etcdstore.Config{Endpoints: []string{sharedEndpoint}}, store.Schema{Buckets: []string{"services"}}, "schema version must be at least 1"},
		{"reserved bucket", etcdstore.Config{Endpoints: []string{sharedEndpoint}}, store.Schema{Version: 1, Buckets: []string{"_meta"}}, `bucket name "_meta" is reserved`},
		{"bucket with a slash", etcdstore.Config{Endpoints: []string{sharedEndpoint}}, store.Schema{Version: 1, Buckets: []string{"a/b"}}, `bucket name "a/b" must not contain "/"`},
		{"empty bucket", etcdstore.Config{Endpoints: []string{sharedEndpoint}}, store.Schema{Version: 1, Buckets: []string{""}}, "empty bucket name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := etcdstore.Open(context.Background(), c.cfg, c.schema)
			if err == nil {
				_ = s.Close()
			}
			require.ErrorContains(t, err, c.wantErr)
		})
	}
}

func TestMissingMigration(t *testing.T) {
	prefix := newPrefix()
	s := openAt(t, prefix, store.Schema{Version: 1, Buckets: []string{"services"}})
	require.NoError(t, s.Close())
	_, err := etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{sharedEndpoint}, Prefix: prefix},
		store.Schema{Version: 2, Buckets: []string{"services"}})
	require.ErrorContains(t, err, "no migration from schema version 1 to 2")
}

// With its etcd gone, every call fails within the request timeout with an
// error naming etcd and the endpoint, and nothing panics.
func TestEtcdUnreachable(t *testing.T) {
	srv, err := etcdtest.StartIn(t.TempDir())
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			srv.Close()
		}
	})
	endpoint := etcdtest.ClientURL(srv)
	cfg := etcdstore.Config{Endpoints: []string{endpoint}, Prefix: "/unreachable/", RequestTimeout: 500 * time.Millisecond}
	ctx := context.Background()
	s, err := etcdstore.Open(ctx, cfg, schema)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = store.Put(ctx, s, "services", "a", []byte("1"), store.MustNotExist)
	require.NoError(t, err)

	// etcd goes away between fn's reads and the commit: the outcome of a
	// commit that got no answer is unknown, and the error must say so.
	err = s.Update(ctx, func(tx store.Tx) error {
		rec, err := tx.Get("services", "a")
		if err != nil {
			return err
		}
		srv.Close()
		stopped = true
		_, err = tx.Put("services", "a", append(rec.Value, '+'), rec.Revision)
		return err
	})
	require.Error(t, err)
	require.Contains(t, err.Error(), "commit (it may or may not have been applied")
	require.NotErrorIs(t, err, store.ErrConflict)

	calls := []struct {
		name string
		call func() error
	}{
		{"Get", func() error { _, err := s.Get(ctx, "services", "a"); return err }},
		{"List", func() error { _, err := s.List(ctx, "services", ""); return err }},
		{"Put", func() error {
			_, err := store.Put(ctx, s, "services", "a", []byte("2"), store.AnyRevision)
			return err
		}},
		{"Update whose fn ignores a failed read", func() error {
			return s.Update(ctx, func(tx store.Tx) error {
				_, _ = tx.Get("services", "a")
				_, _ = tx.Put("services", "b", []byte("x"), store.AnyRevision)
				return nil
			})
		}},
		{"Open", func() error {
			s2, err := etcdstore.Open(ctx, cfg, schema)
			if err == nil {
				_ = s2.Close()
			}
			return err
		}},
	}
	host := strings.TrimPrefix(endpoint, "http://")
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- c.call() }()
			deadline := time.NewTimer(30 * time.Second)
			defer deadline.Stop()
			select {
			case err := <-done:
				require.Error(t, err)
				t.Logf("%s with etcd gone: %v", c.name, err)
				require.Contains(t, err.Error(), "etcd at")
				require.Contains(t, err.Error(), host)
				require.NotErrorIs(t, err, store.ErrNotFound)
				require.NotErrorIs(t, err, store.ErrConflict)
			case <-deadline.C:
				require.FailNow(t, c.name+" hung with etcd gone")
			}
		})
	}
}

// Closing a store makes later calls fail with ErrClosed, also inside an
// Update whose fn is still running.
func TestCloseDuringUpdate(t *testing.T) {
	ctx := context.Background()
	s, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{sharedEndpoint}, Prefix: newPrefix()}, schema)
	require.NoError(t, err)
	err = s.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.Get("services", "a"); !errors.Is(err, store.ErrNotFound) {
			return err
		}
		require.NoError(t, s.Close())
		_, err := tx.Get("services", "b")
		return err
	})
	require.ErrorIs(t, err, store.ErrClosed)
	require.NoError(t, s.Close(), "closing twice is harmless")
}

// Revisions handed out by two replicas interleave but keep increasing.
func TestRevisionsIncreaseAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	prefix := newPrefix()
	a, b := openAt(t, prefix, schema), openAt(t, prefix, schema)
	var last int64
	for i := range 6 {
		s := []store.Store{a, b}[i%2]
		rev, err := store.Put(ctx, s, "services", "k", []byte(strconv.Itoa(i)), store.AnyRevision)
		require.NoError(t, err)
		require.Greater(t, rev, last)
		last = rev
		rec, err := []store.Store{b, a}[i%2].Get(ctx, "services", "k")
		require.NoError(t, err)
		require.Equal(t, rev, rec.Revision, "the other replica reads the revision Put returned")
	}
}

// With authentication enabled on etcd, the credentials in Config are used
// and a store without them is refused with etcd's reason.
func TestAuthentication(t *testing.T) {
	srv, err := etcdtest.StartIn(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	endpoint := etcdtest.ClientURL(srv)
	ctx := context.Background()

	admin, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	_, err = admin.RoleAdd(ctx, "root")
	require.NoError(t, err)
	_, err = admin.UserAdd(ctx, "root", "s3cret")
	require.NoError(t, err)
	_, err = admin.UserGrantRole(ctx, "root", "root")
	require.NoError(t, err)
	_, err = admin.AuthEnable(ctx)
	require.NoError(t, err)

	cfg := etcdstore.Config{Endpoints: []string{endpoint}, Prefix: "/auth/", Username: "root", Password: "s3cret"}
	s, err := etcdstore.Open(ctx, cfg, schema)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	_, err = store.Put(ctx, s, "services", "a", []byte("1"), store.MustNotExist)
	require.NoError(t, err)

	cfg.Username, cfg.Password = "", ""
	anon, err := etcdstore.Open(ctx, cfg, schema)
	if err == nil {
		_ = anon.Close()
	}
	require.ErrorContains(t, err, "user name is empty")

	cfg.Username, cfg.Password = "root", "wrong"
	wrong, err := etcdstore.Open(ctx, cfg, schema)
	if err == nil {
		_ = wrong.Close()
	}
	require.ErrorContains(t, err, "authentication failed")
}
