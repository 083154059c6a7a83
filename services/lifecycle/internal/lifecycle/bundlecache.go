package lifecycle

import (
	"container/list"
	"context"
	"sync"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// bundleCache keeps recently used bundles in memory. A stored bundle never
// changes (it is keyed by digest), so reading it from disk on every GET or
// render would only cost time.
type bundleCache struct {
	Bundles
	size int

	mu    sync.Mutex
	order *list.List // of digests, most recent first
	items map[string]*list.Element
}

type cachedBundle struct {
	digest string
	b      *bundle.Bundle
}

func newBundleCache(b Bundles, size int) *bundleCache {
	return &bundleCache{Bundles: b, size: size, order: list.New(), items: map[string]*list.Element{}}
}

// Load returns the stored bundle, from memory when it was used recently.
// Callers must treat the bundle as read-only.
func (c *bundleCache) Load(digest string) (*bundle.Bundle, error) {
	c.mu.Lock()
	if e, ok := c.items[digest]; ok {
		c.order.MoveToFront(e)
		b := e.Value.(*cachedBundle).b
		c.mu.Unlock()
		return b, nil
	}
	c.mu.Unlock()
	b, err := c.Bundles.Load(digest)
	if err != nil {
		return nil, err
	}
	c.put(b)
	return b, nil
}

// Fetch downloads a bundle and keeps it.
func (c *bundleCache) Fetch(ctx context.Context, source string, progress bundle.Progress) (*bundle.Bundle, error) {
	b, err := c.Bundles.Fetch(ctx, source, progress)
	if err != nil {
		return nil, err
	}
	c.put(b)
	return b, nil
}

// Remove forgets and removes a bundle.
func (c *bundleCache) Remove(digest string) error {
	c.mu.Lock()
	if e, ok := c.items[digest]; ok {
		c.order.Remove(e)
		delete(c.items, digest)
	}
	c.mu.Unlock()
	return c.Bundles.Remove(digest)
}

func (c *bundleCache) put(b *bundle.Bundle) {
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
