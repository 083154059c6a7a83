package etcdstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/boltstore"
)

// Side-by-side figures for platform/store/README.md:
//
//	cd platform && go test -run '^$' -bench . -benchmem -count=3 ./store/etcdstore/
//
// Both stores write to the same local disk and sync every commit (bbolt
// fsyncs its file, the embedded single-member etcd its WAL), and etcd is
// reached over loopback gRPC, so the etcd figures are a floor for a real
// three-member cluster, whose commits also wait for a network round trip.

type benchStore struct {
	name string
	open func(b *testing.B) store.Store
}

var benchStores = []benchStore{
	{"bolt", func(b *testing.B) store.Store {
		s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), schema)
		require.NoError(b, err)
		b.Cleanup(func() { _ = s.Close() })
		return s
	}},
	{"etcd", func(b *testing.B) store.Store { return openAt(b, newPrefix(), schema) }},
}

var benchValue = make([]byte, 256)

// One conditional-free write per Update, the lifecycle service's commonest
// transaction.
func BenchmarkPut(b *testing.B) {
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.open(b)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				_, err := store.Put(ctx, s, "services", fmt.Sprintf("k%04d", i%1000), benchValue, store.AnyRevision)
				if err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// Two reads and two writes in one transaction, as a state transition that
// reads a service and its resource and rewrites both.
func BenchmarkUpdate2Reads2Writes(b *testing.B) {
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.open(b)
			ctx := context.Background()
			for _, k := range []string{"r1", "r2"} {
				_, err := store.Put(ctx, s, "services", k, benchValue, store.MustNotExist)
				require.NoError(b, err)
			}
			for b.Loop() {
				err := s.Update(ctx, func(tx store.Tx) error {
					r1, err := tx.Get("services", "r1")
					if err != nil {
						return err
					}
					r2, err := tx.Get("services", "r2")
					if err != nil {
						return err
					}
					if _, err := tx.Put("resources", "w1", r1.Value, store.AnyRevision); err != nil {
						return err
					}
					_, err = tx.Put("resources", "w2", r2.Value, store.AnyRevision)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Many writers on distinct keys at once: bbolt runs one write transaction
// at a time, etcd batches concurrent commits into one WAL sync.
func BenchmarkPutParallel32(b *testing.B) {
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.open(b)
			ctx := context.Background()
			var writer atomic.Int64
			b.SetParallelism(16) // 16 x GOMAXPROCS(2) = 32 goroutines on the reference machine
			b.RunParallel(func(pb *testing.PB) {
				key := fmt.Sprintf("w%d", writer.Add(1))
				for pb.Next() {
					if _, err := store.Put(ctx, s, "services", key, benchValue, store.AnyRevision); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
