package constraint

import (
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Cache keeps parsed constraints by (syntax, expression), failures
// included, so a fleet of packages sharing a handful of expressions parses
// each one once. It is bounded (least recently used entries go first) and
// safe for concurrent use.
type Cache struct {
	entries *lru.Cache[cacheKey, cacheEntry]
}

type cacheKey struct {
	syntax Syntax
	expr   string
}

type cacheEntry struct {
	c   *Constraint
	err error
}

// NewCache returns a cache holding at most size expressions.
func NewCache(size int) (*Cache, error) {
	if size <= 0 {
		return nil, fmt.Errorf("constraint cache size must be positive, got %d", size)
	}
	entries, err := lru.New[cacheKey, cacheEntry](size)
	if err != nil {
		return nil, fmt.Errorf("constraint cache: %w", err)
	}
	return &Cache{entries: entries}, nil
}

// Parse returns the parsed expression, from the cache when it was seen.
func (c *Cache) Parse(syntax Syntax, expr string) (*Constraint, error) {
	if len(expr) > MaxExpressionLength {
		// Rejected without parsing; caching it would only hold memory.
		return Parse(syntax, expr)
	}
	key := cacheKey{syntax: syntax, expr: expr}
	if e, ok := c.entries.Get(key); ok {
		return e.c, e.err
	}
	parsed, err := Parse(syntax, expr)
	c.entries.Add(key, cacheEntry{c: parsed, err: err})
	return parsed, err
}

// Len is the number of cached expressions.
func (c *Cache) Len() int { return c.entries.Len() }
