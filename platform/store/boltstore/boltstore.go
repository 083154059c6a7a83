// Package boltstore implements store.Store on a bbolt file: the embedded,
// zero-setup default.
package boltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/vcfsm/vcfsm/platform/store"
)

// metaBucket is reserved: it holds the schema version and the revision counter.
var (
	metaBucket       = []byte("_meta")
	keySchemaVersion = []byte("schema_version")
	keyRevision      = []byte("revision")
)

// Store is a bbolt-backed store.Store.
type Store struct {
	db      *bolt.DB
	buckets map[string]bool

	mu     sync.RWMutex
	closed bool

	// rev mirrors the revision counter of the last committed write, so
	// Revision (asked on every gRPC answer for its revision header) needs
	// no read transaction. Writers commit one at a time; it is stored
	// after the commit and before Update returns, so a caller's own write
	// is always covered.
	rev atomic.Int64

	// Batch's queue: the calls waiting for the next batch, and whether a
	// call is leading (committing) one.
	batchMu sync.Mutex
	pending []*batchCall
	leading bool
}

var _ store.Store = (*Store)(nil)

// ErrLocked: another process holds the store's file.
var ErrLocked = errors.New("store file in use")

// lockedError is one sentence naming the file; it is ErrLocked.
type lockedError struct{ path string }

func (e *lockedError) Error() string {
	return e.path + " is locked by another process using the same data directory (another vcfsm or lifecycle?): stop it or choose another --data-dir"
}

func (e *lockedError) Is(target error) bool { return target == ErrLocked }

// lockTimeout bounds the wait for another process's lock on the file.
const lockTimeout = 500 * time.Millisecond

// Options tune Open.
type Options struct {
	// NoSync skips fsync on commit: writes survive a process crash but not
	// a power loss. Only for data that may be lost (simulators, caches).
	NoSync bool
}

// Open opens (creating when needed) the bbolt file at path, creates the
// schema's buckets and runs pending migrations.
func Open(path string, schema store.Schema) (*Store, error) {
	return OpenWithOptions(path, schema, Options{})
}

// OpenWithOptions is Open with options.
func OpenWithOptions(path string, schema store.Schema, opts Options) (*Store, error) {
	if schema.Version < 1 {
		return nil, fmt.Errorf("open %s: schema version must be at least 1", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// A second process holding the file must not make us hang: bbolt
	// polls its file lock until the timeout, then we say who holds it.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout, NoSync: opts.NoSync})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, &lockedError{path: path}
	}
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s := &Store{db: db, buckets: map[string]bool{}}
	for _, b := range schema.Buckets {
		if b == string(metaBucket) {
			_ = db.Close()
			return nil, fmt.Errorf("open %s: bucket name %q is reserved", path, b)
		}
		s.buckets[b] = true
	}
	if err := s.prepare(schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) prepare(schema store.Schema) error {
	return s.db.Update(func(btx *bolt.Tx) error {
		meta, err := btx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		for b := range s.buckets {
			if _, err := btx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return fmt.Errorf("create bucket %s: %w", b, err)
			}
		}
		current := schema.Version
		if raw := meta.Get(keySchemaVersion); raw != nil {
			current, err = strconv.Atoi(string(raw))
			if err != nil {
				return fmt.Errorf("schema version %q is not a number", raw)
			}
		}
		if current > schema.Version {
			return fmt.Errorf("data is at schema version %d, newer than this binary's %d: refusing to downgrade", current, schema.Version)
		}
		tx := &tx{s: s, btx: btx}
		for v := current; v < schema.Version; v++ {
			if v-1 >= len(schema.Migrations) || schema.Migrations[v-1] == nil {
				return fmt.Errorf("no migration from schema version %d to %d", v, v+1)
			}
			if err := schema.Migrations[v-1](tx); err != nil {
				return fmt.Errorf("migrate schema %d to %d: %w", v, v+1, err)
			}
		}
		if raw := meta.Get(keyRevision); len(raw) == 8 {
			s.rev.Store(int64(binary.BigEndian.Uint64(raw)))
		}
		return meta.Put(keySchemaVersion, []byte(strconv.Itoa(schema.Version)))
	})
}

// Path is the file the store lives in.
func (s *Store) Path() string { return s.db.Path() }

// Close closes the bbolt file.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.db.Close()
}

func (s *Store) guard(ctx context.Context) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, store.ErrClosed
	}
	return s.mu.RUnlock, nil
}

// Revision is the store's revision counter: the revision of its latest
// write (0 when the store is closed). One process owns a bbolt file, so
// every read it serves is at this revision.
func (s *Store) Revision() int64 {
	release, err := s.guard(context.Background())
	if err != nil {
		return 0
	}
	defer release()
	return s.rev.Load()
}

// Get reads one record.
func (s *Store) Get(ctx context.Context, bucket, key string) (store.Record, error) {
	release, err := s.guard(ctx)
	if err != nil {
		return store.Record{}, err
	}
	defer release()
	var rec store.Record
	err = s.db.View(func(btx *bolt.Tx) error {
		var err error
		rec, err = (&tx{s: s, btx: btx}).Get(bucket, key)
		return err
	})
	return rec, err
}

// List reads every record of bucket whose key starts with prefix.
func (s *Store) List(ctx context.Context, bucket, prefix string) ([]store.Record, error) {
	release, err := s.guard(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	var recs []store.Record
	err = s.db.View(func(btx *bolt.Tx) error {
		var err error
		recs, err = (&tx{s: s, btx: btx}).List(bucket, prefix)
		return err
	})
	return recs, err
}

// Update runs fn in one bbolt write transaction; bbolt serialises writers,
// so fn runs exactly once.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	release, err := s.guard(ctx)
	if err != nil {
		return err
	}
	defer release()
	t := &tx{s: s}
	err = s.db.Update(func(btx *bolt.Tx) error {
		t.btx = btx
		return fn(t)
	})
	if err == nil && t.rev > 0 {
		s.rev.Store(t.rev)
	}
	return err
}

type tx struct {
	s   *Store
	btx *bolt.Tx
	// rev is the last revision this transaction wrote (0: none).
	rev int64
}

func (t *tx) bucket(name string) (*bolt.Bucket, error) {
	if !t.s.buckets[name] {
		return nil, fmt.Errorf("%w: %q", store.ErrUnknownBucket, name)
	}
	b := t.btx.Bucket([]byte(name))
	if b == nil {
		return nil, fmt.Errorf("%w: %q", store.ErrUnknownBucket, name)
	}
	return b, nil
}

func decode(key, raw []byte) (store.Record, error) {
	if len(raw) < 8 {
		return store.Record{}, fmt.Errorf("record %q is corrupt: %d bytes", key, len(raw))
	}
	return store.Record{
		Key:      string(key),
		Revision: int64(binary.BigEndian.Uint64(raw[:8])),
		Value:    bytes.Clone(raw[8:]),
	}, nil
}

func (t *tx) Get(bucket, key string) (store.Record, error) {
	b, err := t.bucket(bucket)
	if err != nil {
		return store.Record{}, err
	}
	raw := b.Get([]byte(key))
	if raw == nil {
		return store.Record{}, fmt.Errorf("%s/%s: %w", bucket, key, store.ErrNotFound)
	}
	return decode([]byte(key), raw)
}

func (t *tx) List(bucket, prefix string) ([]store.Record, error) {
	b, err := t.bucket(bucket)
	if err != nil {
		return nil, err
	}
	var recs []store.Record
	c := b.Cursor()
	p := []byte(prefix)
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		rec, err := decode(k, v)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

func (t *tx) current(b *bolt.Bucket, key string) (int64, error) {
	raw := b.Get([]byte(key))
	if raw == nil {
		return 0, nil
	}
	rec, err := decode([]byte(key), raw)
	return rec.Revision, err
}

func (t *tx) nextRevision() (int64, error) {
	meta := t.btx.Bucket(metaBucket)
	var rev int64
	if raw := meta.Get(keyRevision); len(raw) == 8 {
		rev = int64(binary.BigEndian.Uint64(raw))
	}
	rev++
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(rev))
	if err := meta.Put(keyRevision, buf[:]); err != nil {
		return rev, err
	}
	t.rev = rev
	return rev, nil
}

func (t *tx) Put(bucket, key string, value []byte, expect int64) (int64, error) {
	if key == "" {
		return 0, errors.New("store: empty key")
	}
	b, err := t.bucket(bucket)
	if err != nil {
		return 0, err
	}
	cur, err := t.current(b, key)
	if err != nil {
		return 0, err
	}
	if err := store.CheckRevision(bucket, key, cur, expect); err != nil {
		return 0, err
	}
	rev, err := t.nextRevision()
	if err != nil {
		return 0, err
	}
	raw := make([]byte, 8+len(value))
	binary.BigEndian.PutUint64(raw[:8], uint64(rev))
	copy(raw[8:], value)
	if err := b.Put([]byte(key), raw); err != nil {
		return 0, fmt.Errorf("put %s/%s: %w", bucket, key, err)
	}
	return rev, nil
}

func (t *tx) Delete(bucket, key string, expect int64) error {
	b, err := t.bucket(bucket)
	if err != nil {
		return err
	}
	cur, err := t.current(b, key)
	if err != nil {
		return err
	}
	if cur == 0 && (expect == store.AnyRevision || expect == store.MustNotExist) {
		return nil
	}
	if err := store.CheckRevision(bucket, key, cur, expect); err != nil {
		return err
	}
	return b.Delete([]byte(key))
}
