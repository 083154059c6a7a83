package fiql

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func nested(depth int) string {
	return strings.Repeat("(", depth) + "status==Healthy" + strings.Repeat(")", depth)
}

func TestBounds(t *testing.T) {
	n, err := Parse(nested(MaxDepth), nil)
	require.NoError(t, err, "nesting up to the limit parses")
	require.True(t, n.Eval(obj(map[string]string{"status": "Healthy"})))

	_, err = Parse(nested(MaxDepth+1), nil)
	require.ErrorIs(t, err, ErrSyntax)
	require.ErrorContains(t, err, "parentheses nested deeper than 32")

	long := "name==" + strings.Repeat("a", MaxLength)
	_, err = Parse(long, nil)
	require.ErrorIs(t, err, ErrSyntax)
	require.ErrorContains(t, err, "4102 bytes long, more than the limit of 4096")

	// 4 MiB of "(" — the gRPC message limit allows 16 MiB — is refused
	// by length before any recursion.
	_, err = Parse(strings.Repeat("(", 4<<20), nil)
	require.ErrorContains(t, err, "more than the limit of 4096")

	// Errors echo a bounded prefix of the input, never all of it.
	_, err = Parse(strings.Repeat("(", MaxDepth+1)+strings.Repeat("x", 2000), nil)
	require.Error(t, err)
	require.Less(t, len(err.Error()), 400, "error: %s", err)

	// Callers name unknown selectors: one longer than any field is
	// refused here, measured, not repeated (issue 25 §8).
	_, err = Parse(strings.Repeat("s", 4000)+"==x", nil)
	require.ErrorIs(t, err, ErrSyntax)
	require.ErrorContains(t, err, "a selector of 4000 bytes, more than the limit of 256")
	require.Less(t, len(err.Error()), 400, "error: %s", err)
	_, err = Parse("a="+strings.Repeat("q", 3000)+"=b", nil)
	require.ErrorContains(t, err, "unsupported operator")
	require.Less(t, len(err.Error()), 600, "error: %s", err)
}

// FuzzParseNesting feeds arbitrary and deeply nested expressions: the parser must
// never panic or overflow, must reject with ErrSyntax, and anything it
// accepts stays within the bounds and evaluates.
func FuzzParseNesting(f *testing.F) {
	for _, seed := range []string{
		"status==Healthy", "(a==b,c==d);e!=f", nested(MaxDepth), nested(MaxDepth + 1), nested(1000),
		strings.Repeat("(", 5000), strings.Repeat("a==b;", 800), "((a==b),(c=lt=d))", "x=='q;(,)'",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		n, err := Parse(expr, nil)
		if err != nil {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("error %v does not wrap ErrSyntax", err)
			}
			return
		}
		if len(expr) > MaxLength {
			t.Fatalf("accepted %d bytes", len(expr))
		}
		if d := depth(n); d > 2*(MaxDepth+1)+1 {
			t.Fatalf("accepted nesting %d", d)
		}
		_ = n.Eval(obj(map[string]string{"a": "b"}))
		_ = n.Selectors()
	})
}

func depth(n Node) int {
	var kids []Node
	switch v := n.(type) {
	case And:
		kids = v
	case Or:
		kids = v
	default:
		return 1
	}
	d := 0
	for _, k := range kids {
		d = max(d, depth(k))
	}
	return d + 1
}
