package version

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCompare(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"1.0.0-alpha.2", "1.0.0-alpha.10", -1},
		{"1.0.0-alpha.10", "1.0.0-alpha.2", 1},
		{"1.0.0-alpha", "1.0.0-alpha.1", -1},
		{"1.0.0-alpha.beta", "1.0.0-beta", -1},
		{"1.0.0-rc.1", "1.0.0", -1},
		{"1.0.0+build.2", "1.0.0+build.1", 0},
		{"1.10.0", "1.9.0", 1},
		{"v1.30.1", "1.30.0", 1},
		{"9.0.0.1", "9.0.0.0", 1},
		{"9.0.0.10", "9.0.0.9", 1},
		{"2.0", "2.0.0", 0},
		{"1.0.0", "1.0.0", 0},
	} {
		require.Equal(t, c.want, Compare(c.a, c.b), "Compare(%q, %q)", c.a, c.b)
	}
}

func TestIsSemver(t *testing.T) {
	require.True(t, IsSemver("1.2.3-rc.1+b.5"))
	require.False(t, IsSemver("v1.2.3"))
	require.False(t, IsSemver("9.0.0.1"))
	require.False(t, IsSemver("latest"))
}

func TestCompareVersions(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"1.0.0", "1.0.0", 0},
		{"1.0.0", "1.5.0", -1},
		{"2.0.0", "1.10.0", 1},
		{"1.10.0", "1.9.0", 1},
		{"9.1.0.0", "9.0.1234", 1},
		{"9.0.0.0", "9.0.0", 0},
		{"1.0.0-rc.1", "1.0.0", -1},
		{"v1.30.2+vmware.1", "1.30.1", 1},
		{"1.2.3+galaxy.1", "1.2.3", 0},
	}
	for _, c := range cases {
		require.Equal(t, c.want, Compare(c.a, c.b), "%s vs %s", c.a, c.b)
		require.Equal(t, -c.want, Compare(c.b, c.a), "%s vs %s", c.b, c.a)
	}
}
