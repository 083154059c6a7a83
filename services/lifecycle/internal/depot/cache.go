package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"container/list"
	"context"
	"sync"
)

// Store is what a Cache fronts: a Fetcher, or anything with its methods.
type Store interface {
	ValidateSource(source string) error
	Fetch(ctx context.Context, source string, progress bundle.Progress) (*bundle.Bundle, error)
	Load(digest string) (*bundle.Bundle, error)
	Remove(digest string) error
}

// Cache keeps recently used bundles in memory. A stored bundle never
// changes (it is keyed by digest), so reading it from disk on every GET or
// render would only cost time.
type Cache struct {
	Store
	size int

	mu    sync.Mutex
	order *list.List // of digests, most recent first
	items map[string]*list.Element
}

type cachedBundle struct {
	digest string
	b      *bundle.Bundle
}

// NewCache keeps up to size bundles of s in memory.
func NewCache(s Store, size int) *Cache {
	return &Cache{Store: s, size: size, order: list.New(), items: map[string]*list.Element{}}
}

// Load returns the stored bundle, from memory when it was used recently.
// Callers must treat the bundle as read-only.
func (c *Cache) Load(digest string) (*bundle.Bundle, error) {
	c.mu.Lock()
	if e, ok := c.items[digest]; ok {
		c.order.MoveToFront(e)
		b := e.Value.(*cachedBundle).b
		c.mu.Unlock()
		return b, nil
	}
	c.mu.Unlock()
	b, err := c.Store.Load(digest)
	if err != nil {
		return nil, err
	}
	c.put(b)
	return b, nil
}

// Fetch downloads a bundle and keeps it.
func (c *Cache) Fetch(ctx context.Context, source string, progress bundle.Progress) (*bundle.Bundle, error) {
	b, err := c.Store.Fetch(ctx, source, progress)
	if err != nil {
		return nil, err
	}
	c.put(b)
	return b, nil
}

// Remove forgets and removes a bundle.
func (c *Cache) Remove(digest string) error {
	c.mu.Lock()
	if e, ok := c.items[digest]; ok {
		c.order.Remove(e)
		delete(c.items, digest)
	}
	c.mu.Unlock()
	return c.Store.Remove(digest)
}

func (c *Cache) put(b *bundle.Bundle) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[b.Digest]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[b.Digest] = c.order.PushFront(&cachedBundle{digest: b.Digest, b: b})
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*cachedBundle).digest)
	}
}
