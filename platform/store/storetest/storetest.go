// Package storetest is the contract every store.Store implementation must
// pass. Call Run from the implementation's own test with an Opener.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/store"
)

// Opener opens a store with the given schema. Within one test, every call
// must return a store over the same backing data (a reopen), so persistence
// and migrations can be checked; the suite closes a store before reopening.
type Opener func(t *testing.T, schema store.Schema) (store.Store, error)

func mustOpen(t *testing.T, open Opener, schema store.Schema) store.Store {
	t.Helper()
	s, err := open(t, schema)
	require.NoError(t, err)
	return s
}

// Schema is the layout the suite writes.
var Schema = store.Schema{Version: 1, Buckets: []string{"services", "resources"}}

// Run runs the whole contract.
func Run(t *testing.T, open Opener) {
	t.Helper()
	cases := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"GetMissing", testGetMissing},
		{"UnknownBucket", testUnknownBucket},
		{"CreateOnlyOnce", testCreateOnlyOnce},
		{"ConditionalPut", testConditionalPut},
		{"ConditionalDelete", testConditionalDelete},
		{"RevisionsNeverReused", testRevisionsNeverReused},
		{"ListPrefix", testListPrefix},
		{"UpdateIsAtomic", testUpdateIsAtomic},
		{"ReadYourWrites", testReadYourWrites},
		{"ValuesAreCopies", testValuesAreCopies},
		{"StaleWritersExactlyOneWins", testStaleWritersExactlyOneWins},
		{"NoLostUpdates", testNoLostUpdates},
		{"ListGuardsAgainstPhantoms", testListGuardsAgainstPhantoms},
		{"PersistsAcrossReopen", testPersistsAcrossReopen},
		{"Migrations", testMigrations},
		{"RefusesNewerSchema", testRefusesNewerSchema},
		{"ClosedStore", testClosedStore},
		{"CancelledContext", testCancelledContext},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, open) })
	}
}

func openDefault(t *testing.T, open Opener) store.Store {
	t.Helper()
	s := mustOpen(t, open, Schema)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testGetMissing(t *testing.T, open Opener) {
	s := openDefault(t, open)
	_, err := s.Get(context.Background(), "services", "nope")
	require.ErrorIs(t, err, store.ErrNotFound)
	recs, err := s.List(context.Background(), "services", "")
	require.NoError(t, err)
	require.Empty(t, recs)
}

func testUnknownBucket(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	_, err := s.Get(ctx, "nope", "k")
	require.ErrorIs(t, err, store.ErrUnknownBucket)
	_, err = s.List(ctx, "nope", "")
	require.ErrorIs(t, err, store.ErrUnknownBucket)
	_, err = store.Put(ctx, s, "nope", "k", []byte("v"), store.AnyRevision)
	require.ErrorIs(t, err, store.ErrUnknownBucket)
}

func testCreateOnlyOnce(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	rev, err := store.Put(ctx, s, "services", "a", []byte("1"), store.MustNotExist)
	require.NoError(t, err)
	require.Positive(t, rev)
	_, err = store.Put(ctx, s, "services", "a", []byte("2"), store.MustNotExist)
	require.ErrorIs(t, err, store.ErrConflict)
	rec, err := s.Get(ctx, "services", "a")
	require.NoError(t, err)
	require.Equal(t, []byte("1"), rec.Value)
	require.Equal(t, rev, rec.Revision)
}

func testConditionalPut(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	r1, err := store.Put(ctx, s, "services", "a", []byte("1"), store.MustNotExist)
	require.NoError(t, err)
	r2, err := store.Put(ctx, s, "services", "a", []byte("2"), r1)
	require.NoError(t, err)
	require.Greater(t, r2, r1)
	_, err = store.Put(ctx, s, "services", "a", []byte("3"), r1)
	require.ErrorIs(t, err, store.ErrConflict, "a write at a stale revision must fail")
	r4, err := store.Put(ctx, s, "services", "a", []byte("4"), store.AnyRevision)
	require.NoError(t, err)
	require.Greater(t, r4, r2)
	rec, err := s.Get(ctx, "services", "a")
	require.NoError(t, err)
	require.Equal(t, []byte("4"), rec.Value)
	_, err = store.Put(ctx, s, "services", "missing", []byte("x"), 12345)
	require.ErrorIs(t, err, store.ErrConflict, "an expected revision on an absent key must fail")
}

func testConditionalDelete(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	r1, err := store.Put(ctx, s, "services", "a", []byte("1"), store.MustNotExist)
	require.NoError(t, err)
	_, err = store.Put(ctx, s, "services", "a", []byte("2"), r1)
	require.NoError(t, err)
	require.ErrorIs(t, store.Delete(ctx, s, "services", "a", r1), store.ErrConflict)
	rec, err := s.Get(ctx, "services", "a")
	require.NoError(t, err, "a failed conditional delete must leave the record")
	require.NoError(t, store.Delete(ctx, s, "services", "a", rec.Revision))
	_, err = s.Get(ctx, "services", "a")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.NoError(t, store.Delete(ctx, s, "services", "a", store.AnyRevision), "deleting an absent key is idempotent")
}

func testRevisionsNeverReused(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	r1, err := store.Put(ctx, s, "services", "a", []byte("1"), store.MustNotExist)
	require.NoError(t, err)
	require.NoError(t, store.Delete(ctx, s, "services", "a", r1))
	r2, err := store.Put(ctx, s, "services", "a", []byte("1"), store.MustNotExist)
	require.NoError(t, err)
	require.Greater(t, r2, r1, "a recreated key must not get its old revision back")
	rb, err := store.Put(ctx, s, "resources", "b", []byte("1"), store.MustNotExist)
	require.NoError(t, err)
	require.Greater(t, rb, r2, "revisions increase across buckets")
}

func testListPrefix(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	for _, k := range []string{"svc/b/2", "svc/a/1", "svc/b/1", "svd/x", "sv"} {
		_, err := store.Put(ctx, s, "resources", k, []byte(k), store.MustNotExist)
		require.NoError(t, err)
	}
	_, err := store.Put(ctx, s, "services", "svc/b/3", []byte("other bucket"), store.MustNotExist)
	require.NoError(t, err)
	recs, err := s.List(ctx, "resources", "svc/b/")
	require.NoError(t, err)
	require.Equal(t, []string{"svc/b/1", "svc/b/2"}, keys(recs))
	require.Equal(t, []byte("svc/b/1"), recs[0].Value)
	all, err := s.List(ctx, "resources", "")
	require.NoError(t, err)
	require.Equal(t, []string{"sv", "svc/a/1", "svc/b/1", "svc/b/2", "svd/x"}, keys(all))
}

func keys(recs []store.Record) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Key)
	}
	return out
}

func testUpdateIsAtomic(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	_, err := store.Put(ctx, s, "services", "keep", []byte("v1"), store.MustNotExist)
	require.NoError(t, err)
	boom := errors.New("boom")
	err = s.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.Put("services", "keep", []byte("v2"), store.AnyRevision); err != nil {
			return err
		}
		if _, err := tx.Put("resources", "new", []byte("x"), store.MustNotExist); err != nil {
			return err
		}
		return boom
	})
	require.ErrorIs(t, err, boom)
	rec, err := s.Get(ctx, "services", "keep")
	require.NoError(t, err)
	require.Equal(t, []byte("v1"), rec.Value, "a failed transaction must keep nothing it wrote")
	_, err = s.Get(ctx, "resources", "new")
	require.ErrorIs(t, err, store.ErrNotFound)

	// A conflict on the second write undoes the first.
	err = s.Update(ctx, func(tx store.Tx) error {
		if _, err := tx.Put("resources", "new", []byte("x"), store.MustNotExist); err != nil {
			return err
		}
		_, err := tx.Put("services", "keep", []byte("v3"), store.MustNotExist)
		return err
	})
	require.ErrorIs(t, err, store.ErrConflict)
	_, err = s.Get(ctx, "resources", "new")
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testReadYourWrites(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	err := s.Update(ctx, func(tx store.Tx) error {
		rev, err := tx.Put("services", "a", []byte("1"), store.MustNotExist)
		if err != nil {
			return err
		}
		rec, err := tx.Get("services", "a")
		if err != nil {
			return err
		}
		if string(rec.Value) != "1" || rec.Revision != rev {
			return fmt.Errorf("read %q@%d inside the transaction, want \"1\"@%d", rec.Value, rec.Revision, rev)
		}
		recs, err := tx.List("services", "")
		if err != nil {
			return err
		}
		if len(recs) != 1 {
			return fmt.Errorf("listed %d records inside the transaction, want 1", len(recs))
		}
		if err := tx.Delete("services", "a", rev); err != nil {
			return err
		}
		if _, err := tx.Get("services", "a"); err == nil {
			return errors.New("deleted key still readable inside the transaction")
		} else if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("deleted key still readable inside the transaction: %w", err)
		}
		_, err = tx.Put("services", "a", []byte("2"), store.MustNotExist)
		return err
	})
	require.NoError(t, err)
	rec, err := s.Get(ctx, "services", "a")
	require.NoError(t, err)
	require.Equal(t, []byte("2"), rec.Value)
}

func testValuesAreCopies(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	val := []byte("original")
	_, err := store.Put(ctx, s, "services", "a", val, store.MustNotExist)
	require.NoError(t, err)
	val[0] = 'X'
	rec, err := s.Get(ctx, "services", "a")
	require.NoError(t, err)
	require.Equal(t, []byte("original"), rec.Value)
	rec.Value[0] = 'Y'
	again, err := s.Get(ctx, "services", "a")
	require.NoError(t, err)
	require.Equal(t, []byte("original"), again.Value)
}

// Many writers that all read the same revision race to write it back:
// exactly one may win.
func testStaleWritersExactlyOneWins(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	base, err := store.Put(ctx, s, "services", "contended", []byte("0"), store.MustNotExist)
	require.NoError(t, err)
	const writers = 16
	var wins, conflicts atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := store.Put(ctx, s, "services", "contended", []byte(fmt.Sprint(i)), base)
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, store.ErrConflict):
				conflicts.Add(1)
			default:
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int32(1), wins.Load(), "exactly one stale writer wins")
	require.Equal(t, int32(writers-1), conflicts.Load())
}

// Read-modify-write loops that retry on conflict never lose an increment.
func testNoLostUpdates(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	_, err := store.Put(ctx, s, "services", "counter", []byte("0"), store.MustNotExist)
	require.NoError(t, err)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					rec, err := s.Get(ctx, "services", "counter")
					if err != nil {
						errs <- err
						return
					}
					var n int
					_, _ = fmt.Sscan(string(rec.Value), &n)
					_, err = store.Put(ctx, s, "services", "counter", []byte(fmt.Sprint(n+1)), rec.Revision)
					if errors.Is(err, store.ErrConflict) {
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
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	rec, err := s.Get(ctx, "services", "counter")
	require.NoError(t, err)
	require.Equal(t, fmt.Sprint(workers*each), string(rec.Value))
}

// Writers insert distinct keys only while a listed range holds fewer than
// limit keys; a serializable store never lets the range overshoot.
func testListGuardsAgainstPhantoms(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx := context.Background()
	const limit, writers = 10, 8
	errFull := errors.New("full")
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				err := s.Update(ctx, func(tx store.Tx) error {
					recs, err := tx.List("resources", "item/")
					if err != nil {
						return err
					}
					if len(recs) >= limit {
						return errFull
					}
					_, err = tx.Put("resources", fmt.Sprintf("item/%d-%d", w, i), nil, store.MustNotExist)
					return err
				})
				if errors.Is(err, errFull) {
					return
				}
				if err != nil && !errors.Is(err, store.ErrConflict) {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	recs, err := s.List(ctx, "resources", "item/")
	require.NoError(t, err)
	require.Len(t, recs, limit)
}

func testPersistsAcrossReopen(t *testing.T, open Opener) {
	ctx := context.Background()
	s := mustOpen(t, open, Schema)
	rev, err := store.Put(ctx, s, "services", "a", []byte("kept"), store.MustNotExist)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s2 := mustOpen(t, open, Schema)
	t.Cleanup(func() { _ = s2.Close() })
	rec, err := s2.Get(ctx, "services", "a")
	require.NoError(t, err)
	require.Equal(t, []byte("kept"), rec.Value)
	require.Equal(t, rev, rec.Revision)
	next, err := store.Put(ctx, s2, "services", "b", []byte("x"), store.MustNotExist)
	require.NoError(t, err)
	require.Greater(t, next, rev, "revisions keep increasing after a reopen")
}

func testMigrations(t *testing.T, open Opener) {
	ctx := context.Background()
	v1 := store.Schema{Version: 1, Buckets: []string{"services"}}
	s := mustOpen(t, open, v1)
	_, err := store.Put(ctx, s, "services", "a", []byte("old-format"), store.MustNotExist)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	var runs atomic.Int32
	v2 := store.Schema{
		Version: 2,
		Buckets: []string{"services", "resources"},
		Migrations: []store.Migration{func(tx store.Tx) error {
			runs.Add(1)
			rec, err := tx.Get("services", "a")
			if err != nil {
				return err
			}
			if _, err := tx.Put("services", "a", append([]byte("new:"), rec.Value...), rec.Revision); err != nil {
				return err
			}
			_, err = tx.Put("resources", "added-by-migration", []byte("1"), store.MustNotExist)
			return err
		}},
	}
	s2 := mustOpen(t, open, v2)
	rec, err := s2.Get(ctx, "services", "a")
	require.NoError(t, err)
	require.Equal(t, "new:old-format", string(rec.Value))
	_, err = s2.Get(ctx, "resources", "added-by-migration")
	require.NoError(t, err)
	require.NoError(t, s2.Close())

	s3 := mustOpen(t, open, v2)
	t.Cleanup(func() { _ = s3.Close() })
	rec, err = s3.Get(ctx, "services", "a")
	require.NoError(t, err)
	require.Equal(t, "new:old-format", string(rec.Value), "a migration runs once")
	require.Positive(t, runs.Load())
}

func testRefusesNewerSchema(t *testing.T, open Opener) {
	s := mustOpen(t, open, store.Schema{Version: 3, Buckets: []string{"services"}})
	require.NoError(t, s.Close())
	older, err := open(t, store.Schema{Version: 1, Buckets: []string{"services"}})
	if err == nil {
		_ = older.Close()
	}
	require.Error(t, err, "a binary must refuse data written by a newer schema")
	require.Contains(t, err.Error(), "schema version 3")
}

func testClosedStore(t *testing.T, open Opener) {
	s := mustOpen(t, open, Schema)
	require.NoError(t, s.Close())
	_, err := s.Get(context.Background(), "services", "a")
	require.ErrorIs(t, err, store.ErrClosed)
	_, err = store.Put(context.Background(), s, "services", "a", nil, store.AnyRevision)
	require.ErrorIs(t, err, store.ErrClosed)
}

func testCancelledContext(t *testing.T, open Opener) {
	s := openDefault(t, open)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Get(ctx, "services", "a")
	require.ErrorIs(t, err, context.Canceled)
	err = s.Update(ctx, func(store.Tx) error { return nil })
	require.ErrorIs(t, err, context.Canceled)
}
