package constraint

import (
	"errors"
	"testing"
)

// The properties: parsing never panics, every rejection is an ErrInvalid
// ParseError that echoes the input and says why, and an accepted expression
// can be evaluated against any version without panicking.

func FuzzSyntaxA(f *testing.F) {
	for _, row := range syntaxAValid {
		f.Add(row.expr, "1.5.0")
	}
	for _, row := range syntaxAInvalid {
		f.Add(row.expr, "v1.30.2+vmware.1")
	}
	f.Fuzz(func(t *testing.T, expr, ver string) {
		c, err := Parse(SyntaxA, expr)
		checkRejection(t, expr, err)
		if err != nil {
			return
		}
		if v, err := ParseKubernetesVersion(ver); err == nil {
			_ = c.AllowsSemver(&v)
		} else if err.Error() == "" {
			t.Fatalf("version %q rejected without a message", ver)
		}
		if v, err := ParseServiceVersion(ver); err == nil {
			_ = c.AllowsSemver(&v)
		}
	})
}

func FuzzSyntaxB(f *testing.F) {
	for _, row := range syntaxBValid {
		f.Add(row.expr, "9.1.0.0")
	}
	for _, row := range syntaxBInvalid {
		f.Add(row.expr, "9.0.1234")
	}
	f.Fuzz(func(t *testing.T, expr, ver string) {
		c, err := Parse(SyntaxB, expr)
		checkRejection(t, expr, err)
		if err != nil {
			return
		}
		if v, err := ParseSupervisorVersion(ver); err == nil {
			_ = c.AllowsVersion(v)
		} else if err.Error() == "" {
			t.Fatalf("version %q rejected without a message", ver)
		}
	})
}

func checkRejection(t *testing.T, expr string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("rejection of %q is not ErrInvalid: %v", expr, err)
	}
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Expression != expr || pe.Reason == "" {
		t.Fatalf("rejection of %q does not echo it with a reason: %#v", expr, err)
	}
}
