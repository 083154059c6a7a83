package fiql

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func obj(fields map[string]string) Getter {
	return func(sel string) (string, bool) {
		v, ok := fields[sel]
		return v, ok
	}
}

func TestEval(t *testing.T) {
	arcturus := obj(map[string]string{
		"name": "arcturus.galaxy.com", "vendor": "broadcom", "status": "Healthy",
		"lifecycleState": "active", "labels.team": "platform", "version": "9.1.0",
	})
	cases := []struct {
		expr string
		want bool
	}{
		// api.md's examples.
		{"lifecycleState==active", true},
		{"vendor==broadcom;status==Healthy", true},
		{"name==*arcturus*", true},
		// Operators.
		{"lifecycleState!=active", false},
		{"status==Busy", false},
		{"name==arcturus*", true},
		{"name==*galaxy", false},
		{"name==*.com", true},
		{"name==a*s*m", true},
		{"name==*", true},
		{"name!=*vega*", true},
		{"version=gt=9.0.0", true},
		{"version=lt=9.0.0", false},
		{"version=ge=9.1.0", true},
		{"version=le=9.1.0", true},
		// Combinators: AND binds tighter than OR.
		{"status==Busy,vendor==broadcom;lifecycleState==active", true},
		{"status==Busy,vendor==vmware;lifecycleState==active", false},
		{"(status==Busy,status==Healthy);labels.team==platform", true},
		{"(status==Busy,status==Unhealthy);labels.team==platform", false},
		// Missing fields only match !=.
		{"labels.env==prod", false},
		{"labels.env!=prod", true},
		// Quoted values.
		{"labels.team=='platform'", true},
		{`name=="arcturus.galaxy.com"`, true},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			n, err := Parse(c.expr, nil)
			require.NoError(t, err)
			require.Equal(t, c.want, n.Eval(arcturus))
		})
	}
}

func TestCustomCompare(t *testing.T) {
	numeric := func(_, a, b string) int { return len(a) - len(b) }
	n, err := Parse("version=gt=9", numeric)
	require.NoError(t, err)
	require.True(t, n.Eval(obj(map[string]string{"version": "10"})), "custom comparer orders 10 after 9")
}

func TestSyntaxErrors(t *testing.T) {
	for _, expr := range []string{
		"", "   ", "status", "status=", "status==", "==x", "status=~=x", "status=like=x",
		"(status==x", "status==x)", "status==x;", ",status==x", "status==x,,a==b",
		"version=gt=1*", "name=='unterminated", "a==b c==d(",
	} {
		t.Run(expr, func(t *testing.T) {
			_, err := Parse(expr, nil)
			require.ErrorIs(t, err, ErrSyntax)
		})
	}
}

func TestSelectors(t *testing.T) {
	n, err := Parse("(a==1,b==2);labels.x!=3", nil)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"a", "b", "labels.x"}, n.Selectors())
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"lifecycleState==active", "vendor==broadcom;status==Healthy", "name==*arcturus*", "(a==1,b=gt=2);c!='x y'"} {
		f.Add(s)
	}
	get := obj(map[string]string{"a": "1", "name": "arcturus"})
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s, nil)
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax)
			return
		}
		n.Eval(get)
	})
}
