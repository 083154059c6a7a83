package depot

import (
	"context"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// Store is what a Cache fronts: a Fetcher, or anything with its methods.
type Store interface {
	ValidateSource(source string) error
	Fetch(ctx context.Context, source string, progress bundle.Progress) (*bundle.Bundle, error)
	Load(digest string) (*bundle.Bundle, error)
	Remove(digest string) error
}

// Cache keeps recently used bundles in memory (the LRU the other services
// use). A stored bundle never changes (it is keyed by digest), so reading
// it from disk on every GET or render would only cost time.
type Cache struct {
	Store
	recent *lru.Cache[string, *bundle.Bundle]
}

// NewCache keeps up to size bundles of s in memory (at least one).
func NewCache(s Store, size int) *Cache {
	recent, err := lru.New[string, *bundle.Bundle](max(size, 1))
	if err != nil {
		panic(err) // only for a size below 1, ruled out above
	}
	return &Cache{Store: s, recent: recent}
}

// Load returns the stored bundle, from memory when it was used recently.
// Callers must treat the bundle as read-only.
func (c *Cache) Load(digest string) (*bundle.Bundle, error) {
	if b, ok := c.recent.Get(digest); ok {
		return b, nil
	}
	b, err := c.Store.Load(digest)
	if err != nil {
		return nil, err
	}
	c.recent.Add(b.Digest, b)
	return b, nil
}

// Fetch downloads a bundle and keeps it.
func (c *Cache) Fetch(ctx context.Context, source string, progress bundle.Progress) (*bundle.Bundle, error) {
	b, err := c.Store.Fetch(ctx, source, progress)
	if err != nil {
		return nil, err
	}
	c.recent.Add(b.Digest, b)
	return b, nil
}

// Remove forgets and removes a bundle.
func (c *Cache) Remove(digest string) error {
	c.recent.Remove(digest)
	return c.Store.Remove(digest)
}
