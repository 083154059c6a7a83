// Package etcdstore implements store.Store on etcd, so several replicas of a
// service can share one consistent store when one machine is not enough.
//
// Key layout under Config.Prefix (default "/vcfsm/"):
//
//	<prefix><bucket>/<key>          a record: 8-byte big-endian revision + value
//	<prefix>_meta/schema_version    the schema version, decimal text
//	<prefix>_meta/deletes/<bucket>  rewritten by every commit that deletes from <bucket>
//
// Update runs fn optimistically against a snapshot (one etcd revision),
// buffers its writes and commits them in one etcd Txn guarded by compares on
// everything fn read; when another writer changed any of it, fn runs again.
// See the package README (../README.md) for why revisions live in the value.
package etcdstore

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/logutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/vcfsm/vcfsm/platform/logging"
	"github.com/vcfsm/vcfsm/platform/store"
)

// Defaults for the zero values of Config.
const (
	DefaultPrefix         = "/vcfsm/"
	DefaultDialTimeout    = 5 * time.Second
	DefaultRequestTimeout = 5 * time.Second
	DefaultMaxAttempts    = 10
)

// metaBucket is reserved for the store's own keys.
const metaBucket = "_meta"

// revisionSize is the length of the revision header in front of every value.
const revisionSize = 8

// Config says how to reach etcd and where under its keyspace the store lives.
type Config struct {
	// Endpoints are the etcd client URLs, e.g. "http://127.0.0.1:2379".
	Endpoints []string
	// Prefix isolates this store's keys; a "/" is appended when missing so
	// "/a" and "/ab" never overlap. Empty means DefaultPrefix.
	Prefix string
	// DialTimeout bounds the etcd client's authentication handshake.
	DialTimeout time.Duration
	// RequestTimeout bounds every single etcd request, so a dead cluster
	// yields an error instead of a hang when the caller's context has no
	// deadline.
	RequestTimeout time.Duration
	// Username and Password enable etcd authentication when Username is set.
	Username string
	Password string
	// TLS enables TLS to etcd when set.
	TLS *tls.Config
	// MaxAttempts bounds how often Update runs fn when other writers keep
	// changing what fn read; after that Update returns store.ErrConflict.
	MaxAttempts int
	// Logger receives the etcd client's own log (warnings and errors),
	// so the process has one log format; nil keeps the client's errors on
	// stderr in zap's format.
	Logger *slog.Logger
	// OnConflict, when set, is called each time a commit loses to another
	// writer and fn runs again (metrics).
	OnConflict func()
}

// Store is an etcd-backed store.Store. It is safe for concurrent use, also
// by several processes sharing the same etcd cluster and prefix.
type Store struct {
	client         *clientv3.Client
	prefix         string
	buckets        map[string]bool
	requestTimeout time.Duration
	maxAttempts    int
	onConflict     func()
	closed         atomic.Bool
	// fencedWrites counts commits refused by their fence.
	fencedWrites atomic.Int64
	// seen is the highest etcd revision an answer to this client carried.
	seen atomic.Int64
}

// Revision is the highest etcd revision this client has seen in an
// answer: at least the revision of every commit it made and every read it
// finished, and never above the cluster's. A reader elsewhere that has
// caught up with it sees all of them (read-your-writes across replicas).
func (s *Store) Revision() int64 { return s.seen.Load() }

// observe raises seen to rev.
func (s *Store) observe(rev int64) {
	for {
		cur := s.seen.Load()
		if rev <= cur || s.seen.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// FencedWrites is how many commits this store refused because their fence
// (store.WithFence) no longer held: writes of a process that had lost its
// ownership.
func (s *Store) FencedWrites() int64 { return s.fencedWrites.Load() }

var _ store.Store = (*Store)(nil)

// Open connects to etcd, creates or verifies the schema version under the
// prefix and runs pending migrations, each in its own transaction. Replicas
// opening at the same time run every migration exactly once between them.
func Open(ctx context.Context, cfg Config, schema store.Schema) (*Store, error) {
	cfg = withDefaults(cfg)
	if err := validate(cfg, schema); err != nil {
		return nil, fmt.Errorf("etcdstore: open: %w", err)
	}
	// The client logs a warning per internal retry (every 25ms while etcd
	// is down); those failures reach callers as errors, so keep only errors.
	logger, err := clientLogger(cfg.Logger)
	if err != nil {
		return nil, err
	}
	client, err := clientv3.New(clientv3.Config{
		Logger:      logger.Named("etcd-client"),
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Username:    cfg.Username,
		Password:    cfg.Password,
		TLS:         cfg.TLS,
	})
	if err != nil {
		return nil, fmt.Errorf("etcdstore: open %v: %w", cfg.Endpoints, err)
	}
	s := &Store{
		client:         client,
		prefix:         cfg.Prefix,
		buckets:        map[string]bool{},
		requestTimeout: cfg.RequestTimeout,
		maxAttempts:    cfg.MaxAttempts,
		onConflict:     cfg.OnConflict,
	}
	for _, b := range schema.Buckets {
		s.buckets[b] = true
	}
	if err := s.prepare(ctx, schema); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("etcdstore: open prefix %q: %w", cfg.Prefix, err)
	}
	return s, nil
}

func withDefaults(cfg Config) Config {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if !strings.HasSuffix(cfg.Prefix, "/") {
		cfg.Prefix += "/"
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	return cfg
}

func validate(cfg Config, schema store.Schema) error {
	if len(cfg.Endpoints) == 0 {
		return errors.New("no etcd endpoints configured")
	}
	if schema.Version < 1 {
		return fmt.Errorf("schema version must be at least 1, got %d", schema.Version)
	}
	for _, b := range schema.Buckets {
		switch {
		case b == "":
			return errors.New("schema declares an empty bucket name")
		case b == metaBucket:
			return fmt.Errorf("bucket name %q is reserved", b)
		case strings.Contains(b, "/"):
			// "<prefix>a/" would also range over bucket "a/b".
			return fmt.Errorf("bucket name %q must not contain %q", b, "/")
		}
	}
	return nil
}

func (s *Store) schemaKey() string { return s.prefix + metaBucket + "/schema_version" }

func (s *Store) deleteMarker(bucket string) string {
	return s.prefix + metaBucket + "/deletes/" + bucket
}

func (s *Store) recordKey(bucket, key string) string { return s.prefix + bucket + "/" + key }

// prepare brings the data under the prefix to schema.Version, one Update per
// step. Each step reads the version key, so it is part of the step's
// compare set: of two replicas migrating at once, one commits and the other
// re-runs, sees the new version and does not apply the migration again.
func (s *Store) prepare(ctx context.Context, schema store.Schema) error {
	for {
		done := false
		err := s.update(ctx, func(t *tx) error {
			done = false
			raw, exists, err := t.load(s.schemaKey())
			if err != nil {
				return err
			}
			if !exists {
				t.putRaw(metaBucket, s.schemaKey(), []byte(strconv.Itoa(schema.Version)))
				done = true
				return nil
			}
			current, err := strconv.Atoi(string(raw))
			if err != nil || current < 1 {
				return fmt.Errorf("stored schema version %q is not a positive number", raw)
			}
			if current > schema.Version {
				return fmt.Errorf("data is at schema version %d, newer than this binary's %d: refusing to downgrade", current, schema.Version)
			}
			if current == schema.Version {
				done = true
				return nil
			}
			if current-1 >= len(schema.Migrations) || schema.Migrations[current-1] == nil {
				return fmt.Errorf("no migration from schema version %d to %d", current, current+1)
			}
			if err := schema.Migrations[current-1](t); err != nil {
				return fmt.Errorf("migrate schema %d to %d: %w", current, current+1, err)
			}
			t.putRaw(metaBucket, s.schemaKey(), []byte(strconv.Itoa(current+1)))
			return nil
		})
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
}

// Close closes the etcd client; requests still in flight fail with
// store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	if err := s.client.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcdstore: close: %w", err)
	}
	return nil
}

func (s *Store) guard(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	return nil
}

func (s *Store) checkBucket(bucket string) error {
	if !s.buckets[bucket] {
		return fmt.Errorf("%w: %q", store.ErrUnknownBucket, bucket)
	}
	return nil
}

// requestContext bounds one etcd request by the request timeout and ends it
// when the store is closed: the client would otherwise keep retrying a
// request on its closed connection until the timeout.
func (s *Store) requestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	rctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
	stop := context.AfterFunc(s.client.Ctx(), cancel)
	return rctx, func() {
		stop()
		cancel()
	}
}

// get runs one etcd range request bounded by the request timeout.
func (s *Store) get(ctx context.Context, what, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if s.closed.Load() {
		return nil, fmt.Errorf("%s: %w", what, store.ErrClosed)
	}
	rctx, cancel := s.requestContext(ctx)
	defer cancel()
	resp, err := s.client.Get(rctx, key, opts...)
	if err != nil {
		return nil, s.explain(ctx, what, err)
	}
	s.observe(resp.Header.Revision)
	return resp, nil
}

// explain turns an etcd client error into one a caller can act on.
func (s *Store) explain(ctx context.Context, what string, err error) error {
	switch {
	case s.closed.Load():
		return fmt.Errorf("%s: %w", what, store.ErrClosed)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: etcd at %v did not answer within %s: %w",
			what, s.client.Endpoints(), s.requestTimeout, err)
	default:
		return fmt.Errorf("%s: etcd at %v: %w", what, s.client.Endpoints(), err)
	}
}

// Get reads one record (a linearizable read).
func (s *Store) Get(ctx context.Context, bucket, key string) (store.Record, error) {
	if err := s.guard(ctx); err != nil {
		return store.Record{}, err
	}
	if err := s.checkBucket(bucket); err != nil {
		return store.Record{}, err
	}
	resp, err := s.get(ctx, "get "+bucket+"/"+key, s.recordKey(bucket, key))
	if err != nil {
		return store.Record{}, err
	}
	if len(resp.Kvs) == 0 {
		return store.Record{}, fmt.Errorf("%s/%s: %w", bucket, key, store.ErrNotFound)
	}
	return decode(key, resp.Kvs[0].Value)
}

// List reads every record of bucket whose key starts with prefix, in key
// order (a linearizable read).
func (s *Store) List(ctx context.Context, bucket, prefix string) ([]store.Record, error) {
	if err := s.guard(ctx); err != nil {
		return nil, err
	}
	if err := s.checkBucket(bucket); err != nil {
		return nil, err
	}
	resp, err := s.get(ctx, "list "+bucket+"/"+prefix+"*", s.recordKey(bucket, prefix), clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	strip := len(s.recordKey(bucket, ""))
	recs := make([]store.Record, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		rec, err := decode(string(kv.Key[strip:]), kv.Value)
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// Update runs fn optimistically and commits its writes in one etcd Txn that
// succeeds only when nothing fn read has changed since fn's snapshot;
// otherwise fn runs again, at most MaxAttempts times in all.
//
// A commit that fails on the network (not on a compare) is not retried and
// its outcome is unknown: the error says so and the caller should re-read.
func (s *Store) Update(ctx context.Context, fn func(store.Tx) error) error {
	return s.update(ctx, func(t *tx) error { return fn(t) })
}

func (s *Store) update(ctx context.Context, fn func(*tx) error) error {
	for attempt := 1; ; attempt++ {
		if err := s.guard(ctx); err != nil {
			return err
		}
		t := newTx(ctx, s)
		fnErr := fn(t)
		// A snapshot compacted away under fn is no conflict of fn's making:
		// start over on a fresh snapshot, whatever fn made of the error.
		if t.compacted && attempt < s.maxAttempts {
			continue
		}
		if fnErr != nil {
			return fnErr
		}
		// fn may have swallowed a failed read; never commit on a guess.
		if t.err != nil {
			return t.err
		}
		committed, err := t.commit()
		if err != nil {
			return err
		}
		if committed {
			return nil
		}
		if s.onConflict != nil {
			s.onConflict()
		}
		if attempt >= s.maxAttempts {
			return fmt.Errorf("etcdstore: update gave up after %d attempts: other writers kept changing what it read: %w",
				attempt, store.ErrConflict)
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

// clientLogger bridges the etcd client's zap log into log at warning level
// (the client warns on each internal retry while etcd is down; callers see
// those failures as errors, so debug and info are dropped).
func clientLogger(log *slog.Logger) (*zap.Logger, error) {
	if log != nil {
		return logging.Zap(log, zap.WarnLevel), nil
	}
	logger, err := logutil.CreateDefaultZapLogger(zap.ErrorLevel)
	if err != nil {
		return nil, fmt.Errorf("etcdstore: open: client logger: %w", err)
	}
	return logger, nil
}

// backoff waits a short random time so replicas that conflicted do not
// collide again in lockstep.
func backoff(ctx context.Context, attempt int) error {
	limit := time.Millisecond << min(attempt, 6)
	timer := time.NewTimer(rand.N(limit))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// encode prefixes value with its store revision.
func encode(rev int64, value []byte) []byte {
	raw := make([]byte, revisionSize+len(value))
	binary.BigEndian.PutUint64(raw, uint64(rev))
	copy(raw[revisionSize:], value)
	return raw
}

// decode splits a stored value; the returned Value is a fresh copy.
func decode(key string, raw []byte) (store.Record, error) {
	if len(raw) < revisionSize {
		return store.Record{}, fmt.Errorf("etcdstore: record %q is corrupt: %d bytes, want at least %d (written by something other than etcdstore?)",
			key, len(raw), revisionSize)
	}
	return store.Record{
		Key:      key,
		Revision: int64(binary.BigEndian.Uint64(raw[:revisionSize])),
		Value:    append([]byte{}, raw[revisionSize:]...),
	}, nil
}
