// Package store is the persistence contract of the system: named buckets of
// versioned records, read and written in serializable transactions with
// optimistic concurrency by revision. bbolt (boltstore) is the embedded
// default; etcd carries the same contract when one machine is not enough.
// Every implementation must pass storetest.Run.
package store

import (
	"context"
	"errors"
	"fmt"
)

var (
	// ErrNotFound: the key does not exist in the bucket.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a conditional write found another revision than expected.
	ErrConflict = errors.New("store: revision conflict")
	// ErrUnknownBucket: the bucket is not declared in the schema.
	ErrUnknownBucket = errors.New("store: unknown bucket")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
)

// Revision expectations for Tx.Put and Tx.Delete.
const (
	// AnyRevision writes whatever the current revision is.
	AnyRevision int64 = -1
	// MustNotExist writes only when the key is absent (create).
	MustNotExist int64 = 0
)

// Record is one stored value. Revision increases on every write of the key
// and is never reused, so it doubles as an optimistic concurrency token.
// It is a per-key token: across keys, revisions are ordered only between
// Updates that do not overlap in time.
type Record struct {
	Key      string
	Value    []byte
	Revision int64
}

// Store is a transactional, versioned key-value store.
type Store interface {
	// Get reads one record.
	Get(ctx context.Context, bucket, key string) (Record, error)
	// List reads every record whose key starts with prefix, in key order.
	List(ctx context.Context, bucket, prefix string) ([]Record, error)
	// Update runs fn in a serializable read-write transaction. When fn
	// returns an error nothing it wrote is kept. Implementations may run fn
	// more than once (optimistic retries), so fn must not have side effects
	// outside the transaction.
	Update(ctx context.Context, fn func(Tx) error) error
	// Close releases the store.
	Close() error
}

// Tx is a read-write view inside Store.Update.
type Tx interface {
	Get(bucket, key string) (Record, error)
	List(bucket, prefix string) ([]Record, error)
	// Put writes value when the current revision matches expect (see
	// AnyRevision, MustNotExist) and returns the new revision; otherwise it
	// returns ErrConflict.
	Put(bucket, key string, value []byte, expect int64) (int64, error)
	// Delete removes the key when its revision matches expect; deleting an
	// absent key with AnyRevision is not an error.
	Delete(bucket, key string, expect int64) error
}

// Schema declares a store's buckets and how to migrate older layouts.
// Declare it once, in one file, for the service that owns the data.
type Schema struct {
	// Version of the layout this code writes.
	Version int
	// Buckets every record lives in.
	Buckets []string
	// Migrations[i] upgrades a store at version i+1 to i+2; a store found at
	// version v runs Migrations[v-1:]. A new store is created at Version.
	Migrations []Migration
}

// Migration rewrites records inside one transaction.
type Migration func(Tx) error

// Put is a convenience for a single conditional write.
func Put(ctx context.Context, s Store, bucket, key string, value []byte, expect int64) (int64, error) {
	var rev int64
	err := s.Update(ctx, func(tx Tx) error {
		var err error
		rev, err = tx.Put(bucket, key, value, expect)
		return err
	})
	return rev, err
}

// Delete is a convenience for a single conditional delete.
func Delete(ctx context.Context, s Store, bucket, key string, expect int64) error {
	return s.Update(ctx, func(tx Tx) error { return tx.Delete(bucket, key, expect) })
}

// CheckRevision is the conditional-write rule every backend applies: the
// write goes ahead when expect is AnyRevision or the key's current
// revision (0 when absent); otherwise ErrConflict naming both.
func CheckRevision(bucket, key string, current, expect int64) error {
	if expect == AnyRevision || expect == current {
		return nil
	}
	return fmt.Errorf("%s/%s: expected revision %d, found %d: %w", bucket, key, expect, current, ErrConflict)
}

// Unwrap returns the store a wrapper (metrics, tracing) decorates, all the
// way down, so backend-specific features (etcd's ownership, its change
// feed) stay reachable through wrappers.
func Unwrap(s Store) Store {
	for {
		w, ok := s.(interface{ Unwrap() Store })
		if !ok {
			return s
		}
		s = w.Unwrap()
	}
}
