package render

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLeafPaths(t *testing.T) {
	doc := newDocument(goNode(map[string]any{
		"regions":    []any{map[string]any{"name": "a", "labels": map[string]any{"services.vcfa.broadcom.com/name": "x"}}},
		"empty":      map[string]any{},
		"none":       []any{},
		"":           "blank key",
		"with space": true,
		"n":          nil,
		"port":       8080.0,
		"ratio":      0.5,
	}))
	var got []string
	for _, l := range leaves(doc) {
		got = append(got, l.path+" = "+l.value)
	}
	require.Equal(t, []string{
		`[""] = "blank key"`,
		`empty = {}`,
		`n = null`,
		`none = []`,
		`port = 8080`,
		`ratio = 0.5`,
		`regions[0].labels["services.vcfa.broadcom.com/name"] = "x"`,
		`regions[0].name = "a"`,
		`["with space"] = true`,
	}, got)
}
