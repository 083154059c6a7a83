package echo

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short values are quoted whole", "name", `"name"`},
		{"at the limit, whole", strings.Repeat("a", MaxValue), `"` + strings.Repeat("a", MaxValue) + `"`},
		{"longer ones are cut and measured", strings.Repeat("b", 15<<20), `"` + strings.Repeat("b", MaxValue-32) + `"… (15728640 bytes)`},
		{"cut on a character boundary", strings.Repeat("a", MaxValue-33) + "é" + strings.Repeat("c", 100), `"` + strings.Repeat("a", MaxValue-33) + `"… (325 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Quote(tc.in)
			require.Equal(t, tc.want, got)
			require.LessOrEqual(t, len(got), MaxValue+32)
			require.True(t, utf8.ValidString(got))
		})
	}
}

func TestCut(t *testing.T) {
	require.Equal(t, "short", Cut("short", 10))
	require.Equal(t, "0123456789… (message cut: 20 bytes)", Cut("01234567890123456789", 10))
}
