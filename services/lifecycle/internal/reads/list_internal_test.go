package reads

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// firstInOrder orders the first elements exactly as a full sort would.
func TestFirstInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 7, 100, 1000} {
		for _, limit := range []int{0, 1, 3, 25, 75, 1000, 2000} {
			xs := make([]int, n)
			for i := range xs {
				xs[i] = rng.IntN(n + 1)
			}
			want := slices.Clone(xs)
			slices.Sort(want)
			ordered := firstInOrder(xs, limit, func(a, b int) bool { return a < b })
			k := min(limit, n)
			if limit <= 0 {
				k = n
			}
			require.GreaterOrEqual(t, ordered, k, "n=%d limit=%d: at least the asked ones are in order", n, limit)
			require.Equal(t, want[:ordered], xs[:ordered], "n=%d limit=%d", n, limit)
			slices.Sort(xs)
			require.Equal(t, want, xs, "the rest is kept")
		}
	}
}
