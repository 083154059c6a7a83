package depot

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// countingStore serves bundles by digest and counts the loads that reach it.
type countingStore struct{ loads map[string]int }

func (s *countingStore) ValidateSource(string) error { return nil }
func (s *countingStore) Fetch(_ context.Context, source string, _ bundle.Progress) (*bundle.Bundle, error) {
	return &bundle.Bundle{Digest: "sha256:" + source, Source: source}, nil
}
func (s *countingStore) Load(digest string) (*bundle.Bundle, error) {
	s.loads[digest]++
	return &bundle.Bundle{Digest: digest}, nil
}
func (s *countingStore) Remove(string) error { return nil }

// The cache answers recently used bundles from memory, keeps at most its
// size (the least recently used goes first) and forgets what is removed.
func TestCacheKeepsTheMostRecentlyUsed(t *testing.T) {
	s := &countingStore{loads: map[string]int{}}
	c := NewCache(s, 2)
	for _, d := range []string{"a", "b", "a", "a"} {
		_, err := c.Load(d)
		require.NoError(t, err)
	}
	require.Equal(t, map[string]int{"a": 1, "b": 1}, s.loads, "repeated loads come from memory")

	_, err := c.Fetch(context.Background(), "c", nil) // a fetched bundle is kept too: b is the oldest
	require.NoError(t, err)
	_, err = c.Load("sha256:c")
	require.NoError(t, err)
	_, err = c.Load("a")
	require.NoError(t, err)
	_, err = c.Load("b")
	require.NoError(t, err)
	require.Equal(t, map[string]int{"a": 1, "b": 2}, s.loads, "b was evicted (least recently used), a and c were kept")

	require.NoError(t, c.Remove("b"))
	_, err = c.Load("b")
	require.NoError(t, err)
	require.Equal(t, 3, s.loads["b"], "a removed bundle is not answered from memory")
}
