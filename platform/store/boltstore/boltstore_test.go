package boltstore_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/boltstore"
	"github.com/vcfsm/vcfsm/platform/store/storetest"
)

func TestContract(t *testing.T) {
	// Each subtest gets its own file; every open within a subtest reopens it.
	var mu sync.Mutex
	paths := map[*testing.T]string{}
	storetest.Run(t, func(t *testing.T, schema store.Schema) (store.Store, error) {
		mu.Lock()
		p, ok := paths[t]
		if !ok {
			p = filepath.Join(t.TempDir(), "vcfsm.db")
			paths[t] = p
		}
		mu.Unlock()
		return boltstore.Open(p, schema)
	})
}
