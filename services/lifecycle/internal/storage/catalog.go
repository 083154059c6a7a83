package storage

import (
	"sync"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// catalogCache keeps each package name's catalog as last read, so a list
// page or a GET (each service shows its available upgrade) does not
// decode every registered version of the package again. A commit that
// wrote a name's entries drops that name; Refresh drops everything.
type catalogCache struct {
	mu    sync.Mutex
	gen   uint64
	names map[string][]lifecycle.CatalogEntry
}

// get returns copies of a name's cached entries, and the generation to
// pass to put after a miss.
func (c *catalogCache) get(name string) ([]*lifecycle.CatalogEntry, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, ok := c.names[name]
	if !ok {
		return nil, c.gen, false
	}
	out := make([]*lifecycle.CatalogEntry, len(entries))
	for i := range entries {
		e := entries[i]
		out[i] = &e
	}
	return out, c.gen, true
}

// put caches entries read at generation gen, unless a write dropped
// anything since (the read may predate it).
func (c *catalogCache) put(name string, gen uint64, entries []*lifecycle.CatalogEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.names == nil {
		c.names = map[string][]lifecycle.CatalogEntry{}
	}
	cp := make([]lifecycle.CatalogEntry, len(entries))
	for i, e := range entries {
		cp[i] = *e
	}
	c.names[name] = cp
}

// drop forgets the names ("" forgets everything).
func (c *catalogCache) drop(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, n := range names {
		if n == "" {
			c.names = nil
			return
		}
		delete(c.names, n)
	}
}

func (c *catalogCache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}
