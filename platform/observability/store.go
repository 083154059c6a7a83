package observability

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vcfsm/vcfsm/platform/store"
)

type storeMetrics struct {
	duration  *prometheus.HistogramVec
	conflicts *prometheus.CounterVec
}

func (t *Telemetry) storeMetrics() *storeMetrics {
	t.storeOnce.Do(func() {
		t.store = &storeMetrics{
			duration: t.NewHistogramVec("store_transaction_duration_seconds",
				"Store transaction latency by backend (bolt, etcd), kind (get, list, update) and result (ok, not_found, conflict, error).",
				FastBuckets, "backend", "kind", "result"),
			conflicts: t.NewCounterVec("store_conflicts_total",
				"Optimistic-concurrency conflicts by backend: etcd transactions re-run after another writer won, and updates that gave up with a revision conflict.",
				"backend"),
		}
	})
	return t.store
}

// StoreRetried counts one optimistic retry of a transaction (etcd's
// commit compare failed and fn runs again).
func (t *Telemetry) StoreRetried(backend string) {
	t.storeMetrics().conflicts.WithLabelValues(backend).Inc()
}

// InstrumentStore times every transaction of st and counts the conflicts
// it returns; backend labels the series ("bolt" or "etcd").
func (t *Telemetry) InstrumentStore(st store.Store, backend string) store.Store {
	m := t.storeMetrics()
	for _, kind := range []string{"get", "list", "update"} {
		for _, result := range []string{"ok", "not_found", "conflict", "error"} {
			m.duration.WithLabelValues(backend, kind, result)
		}
	}
	m.conflicts.WithLabelValues(backend)
	return &instrumentedStore{Store: st, m: m, backend: backend}
}

type instrumentedStore struct {
	store.Store
	m       *storeMetrics
	backend string
}

func (s *instrumentedStore) observe(kind string, start time.Time, err error) {
	result := "ok"
	switch {
	case err == nil:
	case errors.Is(err, store.ErrNotFound):
		result = "not_found"
	case errors.Is(err, store.ErrConflict):
		result = "conflict"
		s.m.conflicts.WithLabelValues(s.backend).Inc()
	default:
		result = "error"
	}
	s.m.duration.WithLabelValues(s.backend, kind, result).Observe(time.Since(start).Seconds())
}

func (s *instrumentedStore) Get(ctx context.Context, bucket, key string) (store.Record, error) {
	start := time.Now()
	r, err := s.Store.Get(ctx, bucket, key)
	s.observe("get", start, err)
	return r, err
}

func (s *instrumentedStore) List(ctx context.Context, bucket, prefix string) ([]store.Record, error) {
	start := time.Now()
	rs, err := s.Store.List(ctx, bucket, prefix)
	s.observe("list", start, err)
	return rs, err
}

func (s *instrumentedStore) Update(ctx context.Context, fn func(store.Tx) error) error {
	start := time.Now()
	err := s.Store.Update(ctx, fn)
	s.observe("update", start, err)
	return err
}

// Unwrap returns the instrumented store.
func (s *instrumentedStore) Unwrap() store.Store { return s.Store }
