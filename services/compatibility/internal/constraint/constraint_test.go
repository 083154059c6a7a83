package constraint

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSyntaxACheatSheet(t *testing.T) {
	for _, row := range syntaxAValid {
		t.Run(row.meaning, func(t *testing.T) {
			c, err := Parse(SyntaxA, row.expr)
			require.NoError(t, err, "expression %q", row.expr)
			require.Equal(t, row.expr, c.Expression())
			require.Equal(t, SyntaxA, c.Syntax())
			for _, v := range row.allow {
				sv, err := ParseKubernetesVersion(v)
				require.NoError(t, err)
				require.True(t, c.AllowsSemver(&sv), "%q must allow %s", row.expr, v)
			}
			for _, v := range row.deny {
				sv, err := ParseKubernetesVersion(v)
				require.NoError(t, err)
				require.False(t, c.AllowsSemver(&sv), "%q must deny %s", row.expr, v)
			}
		})
	}
}

func TestSyntaxAInvalid(t *testing.T) {
	for _, row := range syntaxAInvalid {
		t.Run(row.meaning, func(t *testing.T) {
			_, err := Parse(SyntaxA, row.expr)
			require.Error(t, err, "expression %q must be rejected", row.expr)
			require.ErrorIs(t, err, ErrInvalid)
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, row.expr, pe.Expression, "the offending string is echoed verbatim")
			require.Contains(t, err.Error(), fmt.Sprintf("%q", row.expr))
			require.Contains(t, err.Error(), row.reason)
			require.Contains(t, err.Error(), "Syntax A")
		})
	}
}

func TestSyntaxBCheatSheet(t *testing.T) {
	for _, row := range syntaxBValid {
		t.Run(row.meaning, func(t *testing.T) {
			c, err := Parse(SyntaxB, row.expr)
			require.NoError(t, err, "expression %q", row.expr)
			require.Equal(t, SyntaxB, c.Syntax())
			for _, v := range row.allow {
				sv, err := ParseSupervisorVersion(v)
				require.NoError(t, err)
				require.True(t, c.AllowsVersion(sv), "%q must allow %s", row.expr, v)
			}
			for _, v := range row.deny {
				sv, err := ParseSupervisorVersion(v)
				require.NoError(t, err)
				require.False(t, c.AllowsVersion(sv), "%q must deny %s", row.expr, v)
			}
		})
	}
}

func TestSyntaxBInvalid(t *testing.T) {
	for _, row := range syntaxBInvalid {
		t.Run(row.meaning, func(t *testing.T) {
			_, err := Parse(SyntaxB, row.expr)
			require.Error(t, err, "expression %q must be rejected", row.expr)
			require.ErrorIs(t, err, ErrInvalid)
			require.Contains(t, err.Error(), fmt.Sprintf("%q", row.expr))
			require.Contains(t, err.Error(), row.reason)
			require.Contains(t, err.Error(), "Syntax B")
		})
	}
}

func TestMissingSegmentsAreEquivalent(t *testing.T) {
	// compatibility.md: ">9.0", ">9.0.0" and ">9.0.0.0" are all valid and
	// mean the same thing.
	versions := []string{"8.9", "9", "9.0.0.0", "9.0.0.1", "9.0.1", "9.1", "10.0.0.0"}
	var want []bool
	for i, expr := range []string{">9.0", ">9.0.0", ">9.0.0.0"} {
		c, err := Parse(SyntaxB, expr)
		require.NoError(t, err)
		var got []bool
		for _, v := range versions {
			sv, err := ParseSupervisorVersion(v)
			require.NoError(t, err)
			got = append(got, c.AllowsVersion(sv))
		}
		if i == 0 {
			want = got
			continue
		}
		require.Equal(t, want, got, "%s must decide like >9.0", expr)
	}
}

func TestWildcardsMatchTheirExpansion(t *testing.T) {
	// compatibility.md: 1.2.x ≡ >=1.2.0 <1.3.0 and 1.x ≡ >=1.0.0 <2.0.0.
	versions := []string{"0.9.9", "1.0.0", "1.1.9", "1.2.0", "1.2.5", "1.3.0", "1.9.9", "2.0.0"}
	for wildcard, expanded := range map[string]string{"1.2.x": ">=1.2.0 <1.3.0", "1.x": ">=1.0.0 <2.0.0"} {
		w, err := Parse(SyntaxA, wildcard)
		require.NoError(t, err)
		e, err := Parse(SyntaxA, expanded)
		require.NoError(t, err)
		for _, v := range versions {
			sv, err := ParseServiceVersion(v)
			require.NoError(t, err)
			require.Equal(t, e.AllowsSemver(&sv), w.AllowsSemver(&sv), "%s vs %s on %s", wildcard, expanded, v)
		}
	}
}

func TestParseRejectsOverlongAndUnknownSyntax(t *testing.T) {
	long := ">=" + strings.Repeat("1", MaxExpressionLength)
	for _, s := range []Syntax{SyntaxA, SyntaxB} {
		_, err := Parse(s, long)
		require.ErrorIs(t, err, ErrInvalid)
		require.Contains(t, err.Error(), "longer than")
	}
	_, err := Parse(Syntax(9), ">=1.0.0")
	require.ErrorIs(t, err, ErrInvalid)
	require.Contains(t, err.Error(), "unknown syntax")
}

func TestCrossSyntaxCallsDeny(t *testing.T) {
	a, err := Parse(SyntaxA, ">=1.0.0")
	require.NoError(t, err)
	b, err := Parse(SyntaxB, ">=9.0")
	require.NoError(t, err)
	sv, err := ParseSupervisorVersion("9.1")
	require.NoError(t, err)
	kv, err := ParseKubernetesVersion("1.2.0")
	require.NoError(t, err)
	require.False(t, a.AllowsVersion(sv))
	require.False(t, b.AllowsSemver(&kv))
}

func TestVersionParsing(t *testing.T) {
	tests := []struct {
		name    string
		parse   func(string) error
		in      string
		wantErr string
	}{
		{"kubernetes with v and vmware build", k8s, "v1.30.2+vmware.1", ""},
		{"kubernetes short", k8s, "1.30", ""},
		{"kubernetes with spaces", k8s, " v1.30.2 ", ""},
		{"kubernetes garbage", k8s, "one.thirty", "Invalid character"},
		{"kubernetes empty", k8s, "", "empty version"},
		{"kubernetes too long", k8s, strings.Repeat("1", MaxVersionLength+1), "longer than"},
		{"supervisor four segments", sup, "9.0.0.0", ""},
		{"supervisor inventory style", sup, "9.0.1234", ""},
		{"supervisor garbage", sup, "nine", "malformed version"},
		{"supervisor empty", sup, "  ", "empty version"},
		{"service semver", svc, "1.2.3", ""},
		{"service with build metadata", svc, "1.2.3+galaxy.1", ""},
		{"service four segments is not semver", svc, "9.1.0.0", "Invalid character"},
		{"service with v is not semver", svc, "v1.2.3", "Invalid character"},
		{"service short is not semver", svc, "1.2", "No Major.Minor.Patch"},
		{"service empty", svc, "", "empty version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.parse(tt.in)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func k8s(s string) error { _, err := ParseKubernetesVersion(s); return err }
func sup(s string) error { _, err := ParseSupervisorVersion(s); return err }
func svc(s string) error { _, err := ParseServiceVersion(s); return err }

func TestCacheReturnsSameParseAndCachesFailures(t *testing.T) {
	c, err := NewCache(2)
	require.NoError(t, err)
	first, err := c.Parse(SyntaxA, ">=1.0.0")
	require.NoError(t, err)
	second, err := c.Parse(SyntaxA, ">=1.0.0")
	require.NoError(t, err)
	require.Same(t, first, second, "a cached expression is parsed once")

	_, err1 := c.Parse(SyntaxB, "==9.0")
	_, err2 := c.Parse(SyntaxB, "==9.0")
	require.ErrorIs(t, err1, ErrInvalid)
	require.Same(t, err1, err2, "failures are cached too")

	// The same text under the other syntax is a different entry.
	_, err = c.Parse(SyntaxB, ">=1.0.0")
	require.NoError(t, err)
	require.Equal(t, 2, c.Len(), "the cache is bounded")

	_, err = NewCache(0)
	require.Error(t, err)
}

func TestCacheConcurrentUse(t *testing.T) {
	c, err := NewCache(8)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				expr := fmt.Sprintf(">=1.%d.0", i%16)
				got, err := c.Parse(SyntaxA, expr)
				if err != nil {
					errs <- err
					return
				}
				if got.Expression() != expr {
					errs <- fmt.Errorf("got %q for %q", got.Expression(), expr)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.LessOrEqual(t, c.Len(), 8)
}
