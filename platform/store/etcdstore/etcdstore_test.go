package etcdstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore/etcdtest"
	"github.com/vcfsm/vcfsm/platform/store/storetest"
)

func TestContract(t *testing.T) {
	// Each subtest gets its own prefix; every open within a subtest reopens it.
	var mu sync.Mutex
	prefixes := map[*testing.T]string{}
	storetest.Run(t, func(t *testing.T, schema store.Schema) (store.Store, error) {
		mu.Lock()
		p, ok := prefixes[t]
		if !ok {
			p = newPrefix()
			prefixes[t] = p
		}
		mu.Unlock()
		return etcdstore.Open(context.Background(), etcdstore.Config{Endpoints: []string{sharedEndpoint}, Prefix: p}, schema)
	})
}

var schema = store.Schema{Version: 1, Buckets: []string{"services", "resources"}}

// describe renders records as "key=value,..." so a row can state what a
// transaction saw in one string.
func describe(recs []store.Record) string {
	parts := make([]string, 0, len(recs))
	for _, r := range recs {
		parts = append(parts, r.Key+"="+string(r.Value))
	}
	return strings.Join(parts, ",")
}

func getOrAbsent(tx store.Tx, key string) (string, error) {
	rec, err := tx.Get("services", key)
	if errors.Is(err, store.ErrNotFound) {
		return "absent", nil
	}
	return string(rec.Value), err
}

func listRange(prefix string) func(store.Tx) (string, error) {
	return func(tx store.Tx) (string, error) {
		recs, err := tx.List("services", prefix)
		return describe(recs), err
	}
}

func getKey(key string) func(store.Tx) (string, error) {
	return func(tx store.Tx) (string, error) { return getOrAbsent(tx, key) }
}

func put(key, value string) func(context.Context, store.Store) error {
	return func(ctx context.Context, s store.Store) error {
		_, err := store.Put(ctx, s, "services", key, []byte(value), store.AnyRevision)
		return err
	}
}

func del(key string) func(context.Context, store.Store) error {
	return func(ctx context.Context, s store.Store) error {
		return store.Delete(ctx, s, "services", key, store.AnyRevision)
	}
}

// Another replica writes between fn's reads and its commit. The Update must
// re-run fn exactly when the write touched what fn read, and the committed
// summary must reflect the state after the interfering write.
func TestUpdateRetriesWhenReadSetChanges(t *testing.T) {
	cases := []struct {
		name         string
		read         func(store.Tx) (string, error)
		interfere    func(context.Context, store.Store) error
		readOnly     bool
		wantAttempts int
		wantSummary  string
	}{
		{"Get of a key another replica updates", getKey("svc/a"), put("svc/a", "10"), false, 2, "10"},
		{"Get of an absent key another replica creates", getKey("svc/new"), put("svc/new", "n"), false, 2, "n"},
		{"Get of a key another replica deletes", getKey("svc/a"), del("svc/a"), false, 2, "absent"},
		{"List range another replica inserts into", listRange("svc/"), put("svc/c", "3"), false, 2, "svc/a=1,svc/b=2,svc/c=3"},
		{"List range whose record another replica updates", listRange("svc/"), put("svc/b", "20"), false, 2, "svc/a=1,svc/b=20"},
		{"List range another replica deletes from", listRange("svc/"), del("svc/b"), false, 2, "svc/a=1"},
		{"empty List range another replica inserts into", listRange("new/"), put("new/1", "n"), false, 2, "new/1=n"},
		{"write outside the listed range does not conflict", listRange("svc/"), put("other/x", "y"), false, 1, "svc/a=1,svc/b=2"},
		{"write to a key fn did not read does not conflict", getKey("svc/a"), put("svc/b", "20"), false, 1, "1"},
		{"delete outside the listed range conflicts (the delete marker is per bucket)", listRange("svc/"), del("other/x"), false, 2, "svc/a=1,svc/b=2"},
		{"read-only transaction is not retried and sees its snapshot", listRange("svc/"), put("svc/c", "3"), true, 1, "svc/a=1,svc/b=2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			prefix := newPrefix()
			var conflicts atomic.Int32
			s, err := etcdstore.Open(ctx, etcdstore.Config{Endpoints: []string{sharedEndpoint}, Prefix: prefix,
				OnConflict: func() { conflicts.Add(1) }}, schema)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			replica := openAt(t, prefix, schema)
			for k, v := range map[string]string{"svc/a": "1", "svc/b": "2", "other/x": "x"} {
				_, err := store.Put(ctx, s, "services", k, []byte(v), store.MustNotExist)
				require.NoError(t, err)
			}
			attempts := 0
			var summary string
			err = s.Update(ctx, func(tx store.Tx) error {
				attempts++
				var err error
				summary, err = c.read(tx)
				if err != nil {
					return err
				}
				if attempts == 1 {
					if err := c.interfere(ctx, replica); err != nil {
						return fmt.Errorf("interfere: %w", err)
					}
				}
				if c.readOnly {
					return nil
				}
				_, err = tx.Put("resources", "summary", []byte(summary), store.AnyRevision)
				return err
			})
			require.NoError(t, err)
			require.Equal(t, c.wantAttempts, attempts)
			require.Equal(t, int32(c.wantAttempts-1), conflicts.Load(), "OnConflict once per lost commit")
			require.Equal(t, c.wantSummary, summary)
			if !c.readOnly {
				rec, err := s.Get(ctx, "resources", "summary")
				require.NoError(t, err)
				require.Equal(t, c.wantSummary, string(rec.Value))
			}
		})
	}
}

// Two replicas read the same counter before either commits: exactly one
// commit fails its compare and re-runs fn, and no increment is lost.
func TestRacingReplicasOneRetries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := newPrefix()
	replicas := []store.Store{openAt(t, prefix, schema), openAt(t, prefix, schema)}
	_, err := store.Put(ctx, replicas[0], "services", "counter", []byte("0"), store.MustNotExist)
	require.NoError(t, err)

	var bothRead sync.WaitGroup
	bothRead.Add(len(replicas))
	var runs atomic.Int32
	errs := make(chan error, len(replicas))
	for _, s := range replicas {
		go func() {
			first := true
			errs <- s.Update(ctx, func(tx store.Tx) error {
				runs.Add(1)
				rec, err := tx.Get("services", "counter")
				if err != nil {
					return err
				}
				if first {
					first = false
					bothRead.Done()
					bothRead.Wait()
				}
				n, err := strconv.Atoi(string(rec.Value))
				if err != nil {
					return err
				}
				_, err = tx.Put("services", "counter", []byte(strconv.Itoa(n+1)), store.AnyRevision)
				return err
			})
		}()
	}
	for range replicas {
		require.NoError(t, <-errs)
	}
	require.Equal(t, int32(3), runs.Load(), "the replica that commits second must run fn again")
	rec, err := replicas[1].Get(ctx, "services", "counter")
	require.NoError(t, err)
	require.Equal(t, "2", string(rec.Value))
}

// Read-modify-write loops on two replicas (two etcd clients) sharing one
// prefix lose no update, relying only on Update's own retries.
func TestReplicasLoseNoUpdates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prefix := newPrefix()
	replicas := []store.Store{openAt(t, prefix, schema), openAt(t, prefix, schema)}
	_, err := store.Put(ctx, replicas[0], "services", "counter", []byte("0"), store.MustNotExist)
	require.NoError(t, err)

	const perReplica, each = 4, 15
	var runs, gaveUp atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, len(replicas)*perReplica)
	for _, s := range replicas {
		for range perReplica {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					for {
						err := s.Update(ctx, func(tx store.Tx) error {
							runs.Add(1)
							rec, err := tx.Get("services", "counter")
							if err != nil {
								return err
							}
							n, err := strconv.Atoi(string(rec.Value))
							if err != nil {
								return err
							}
							_, err = tx.Put("services", "counter", []byte(strconv.Itoa(n+1)), store.AnyRevision)
							return err
						})
						if errors.Is(err, store.ErrConflict) {
							// Out of attempts: nothing was written, so trying again is safe.
							gaveUp.Add(1)
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						break
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	total := len(replicas) * perReplica * each
	rec, err := replicas[0].Get(ctx, "services", "counter")
	require.NoError(t, err)
	require.Equal(t, strconv.Itoa(total), string(rec.Value))
	t.Logf("%d increments took %d runs of fn; %d updates ran out of attempts", total, runs.Load(), gaveUp.Load())
}

// Write skew through a List range: every replica inserts a new, unique key
// only while the range holds fewer than limit keys. No two inserts share a
// key, so only the range guard can keep the total at limit.
func TestListRangeGuardPreventsPhantoms(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	prefix := newPrefix()
	replicas := []store.Store{openAt(t, prefix, schema), openAt(t, prefix, schema)}
	const limit, perReplica = 12, 4
	errFull := errors.New("range full")
	var wg sync.WaitGroup
	errs := make(chan error, len(replicas)*perReplica)
	for r, s := range replicas {
		for g := range perReplica {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					err := s.Update(ctx, func(tx store.Tx) error {
						recs, err := tx.List("services", "item/")
						if err != nil {
							return err
						}
						if len(recs) >= limit {
							return errFull
						}
						_, err = tx.Put("services", fmt.Sprintf("item/%d-%d-%d", r, g, i), []byte("x"), store.MustNotExist)
						return err
					})
					switch {
					case errors.Is(err, errFull):
						return
					case err != nil && !errors.Is(err, store.ErrConflict):
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	recs, err := replicas[0].List(ctx, "services", "item/")
	require.NoError(t, err)
	require.Len(t, recs, limit, "concurrent inserts into a listed range must not overshoot")
}

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
