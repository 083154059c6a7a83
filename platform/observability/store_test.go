package observability_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/boltstore"
)

// The store wrapper times every transaction by kind and result and counts
// conflicts.
func TestInstrumentStore(t *testing.T) {
	bolt, err := boltstore.Open(filepath.Join(t.TempDir(), "s.db"), store.Schema{Version: 1, Buckets: []string{"b"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = bolt.Close() })
	tel := observability.WithTracer(nil)
	st := tel.InstrumentStore(bolt, "bolt")
	ctx := context.Background()

	_, err = store.Put(ctx, st, "b", "k", []byte("v"), store.MustNotExist)
	require.NoError(t, err)
	_, err = store.Put(ctx, st, "b", "k", []byte("v"), store.MustNotExist)
	require.ErrorIs(t, err, store.ErrConflict)
	_, err = st.Get(ctx, "b", "k")
	require.NoError(t, err)
	_, err = st.Get(ctx, "b", "absent")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = st.List(ctx, "b", "")
	require.NoError(t, err)

	count := func(kind, result string) int {
		var n int
		fams, err := tel.Registry.Gather()
		require.NoError(t, err)
		for _, f := range fams {
			if f.GetName() != "vcfsm_store_transaction_duration_seconds" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["backend"] == "bolt" && labels["kind"] == kind && labels["result"] == result {
					n += int(m.GetHistogram().GetSampleCount())
				}
			}
		}
		return n
	}
	require.Equal(t, 1, count("update", "ok"))
	require.Equal(t, 1, count("update", "conflict"))
	require.Equal(t, 1, count("get", "ok"))
	require.Equal(t, 1, count("get", "not_found"))
	require.Equal(t, 1, count("list", "ok"))
	require.NoError(t, testutil.GatherAndCompare(tel.Registry, strings.NewReader(`
# HELP vcfsm_store_conflicts_total Optimistic-concurrency conflicts by backend: etcd transactions re-run after another writer won, and updates that gave up with a revision conflict.
# TYPE vcfsm_store_conflicts_total counter
vcfsm_store_conflicts_total{backend="bolt"} 1
`), "vcfsm_store_conflicts_total"))
}
