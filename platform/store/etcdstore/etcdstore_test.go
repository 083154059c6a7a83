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

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
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
