// Package constraint parses the two constraint syntaxes of seed 000 with the
// libraries the platform uses, and parses the versions they are checked
// against.
//
// Syntax A (Kubernetes, source-upgrade and destination-upgrade constraints)
// is blang/semver's ParseRange; Syntax B (Supervisor version constraints) is
// hashicorp/go-version's NewConstraint. An empty (or all-blank) expression
// means "always compatible".
package constraint

import (
	"errors"
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
	version "github.com/hashicorp/go-version"
)

// Syntax selects the parser of an expression.
type Syntax uint8

const (
	// SyntaxA is blang/semver's ParseRange grammar.
	SyntaxA Syntax = iota + 1
	// SyntaxB is hashicorp/go-version's NewConstraint grammar.
	SyntaxB
)

func (s Syntax) String() string {
	switch s {
	case SyntaxA:
		return "Syntax A (blang/semver ParseRange)"
	case SyntaxB:
		return "Syntax B (hashicorp/go-version NewConstraint)"
	default:
		return fmt.Sprintf("unknown syntax %d", uint8(s))
	}
}

// MaxExpressionLength bounds what the parsers are given: real constraints
// are a few dozen characters, and the bound keeps the parse cache's memory
// predictable whatever callers send.
const MaxExpressionLength = 1024

// ErrInvalid is the sentinel every parse failure wraps.
var ErrInvalid = errors.New("invalid constraint expression")

// ParseError says why an expression was rejected. It echoes the expression
// verbatim so the caller can show it next to where it came from.
type ParseError struct {
	Syntax     Syntax
	Expression string
	Reason     string
	// Hint suggests the valid spelling for common mistakes; may be empty.
	Hint string
}

func (e *ParseError) Error() string {
	msg := fmt.Sprintf("%q is not a valid %s constraint: %s", e.Expression, e.Syntax, e.Reason)
	if e.Hint != "" {
		msg += " (" + e.Hint + ")"
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *ParseError) Unwrap() error { return ErrInvalid }

// Constraint is a parsed expression. It is immutable and safe for
// concurrent use.
type Constraint struct {
	expr   string
	syntax Syntax
	// Exactly one of these is set unless the expression is empty.
	rangeA semver.Range
	consB  version.Constraints
}

// Expression returns the expression as written.
func (c *Constraint) Expression() string { return c.expr }

// Syntax returns the grammar the expression was parsed with.
func (c *Constraint) Syntax() Syntax { return c.syntax }

// IsEmpty reports an empty expression, which every version satisfies.
func (c *Constraint) IsEmpty() bool { return c.rangeA == nil && c.consB == nil }

// AllowsSemver checks a Syntax A constraint. It must not be called on a
// Syntax B constraint (it then reports false).
func (c *Constraint) AllowsSemver(v *semver.Version) bool {
	if c.rangeA != nil {
		return c.rangeA(*v)
	}
	return c.consB == nil
}

// AllowsVersion checks a Syntax B constraint. It must not be called on a
// Syntax A constraint (it then reports false).
func (c *Constraint) AllowsVersion(v *version.Version) bool {
	if c.consB != nil {
		return c.consB.Check(v)
	}
	return c.rangeA == nil
}

// Parse parses expr with the given syntax.
func Parse(syntax Syntax, expr string) (*Constraint, error) {
	if syntax != SyntaxA && syntax != SyntaxB {
		return nil, &ParseError{Syntax: syntax, Expression: expr, Reason: "unknown syntax"}
	}
	if strings.TrimSpace(expr) == "" {
		return &Constraint{expr: expr, syntax: syntax}, nil
	}
	if len(expr) > MaxExpressionLength {
		return nil, &ParseError{Syntax: syntax, Expression: expr,
			Reason: fmt.Sprintf("longer than %d characters", MaxExpressionLength)}
	}
	switch syntax {
	case SyntaxA:
		if err := checkOperatorsA(expr); err != nil {
			return nil, &ParseError{Syntax: syntax, Expression: expr, Reason: err.Error(), Hint: hintA(expr)}
		}
		r, err := semver.ParseRange(expr)
		if err != nil {
			return nil, &ParseError{Syntax: syntax, Expression: expr, Reason: err.Error(), Hint: hintA(expr)}
		}
		return &Constraint{expr: expr, syntax: syntax, rangeA: r}, nil
	default:
		cs, err := version.NewConstraint(expr)
		if err != nil {
			return nil, &ParseError{Syntax: syntax, Expression: expr, Reason: err.Error(), Hint: hintB(expr)}
		}
		return &Constraint{expr: expr, syntax: syntax, consB: cs}, nil
	}
}

// allowedOperatorsA are the comparators ParseRange documents.
var allowedOperatorsA = map[string]bool{
	"": true, "=": true, "==": true, "!=": true, "!": true,
	">": true, ">=": true, "<": true, "<=": true,
}

// checkOperatorsA closes gaps in ParseRange, which otherwise accepts what
// the seed says is not supported, or reads it wrongly:
//   - when a comparator carries an x-wildcard, ParseRange drops an unknown
//     operator instead of rejecting it, so "~1.2.x", "^1.x" or "abc1.2.x"
//     would silently mean "=1.2.0";
//   - ParseRange drops one-character tokens, so the hyphen range
//     "1.0.0 - 2.0.0" would silently mean "=1.0.0 =2.0.0" (nothing) and
//     "1.0.0 | 2.0.0" would be an AND;
//   - a wildcard is read wrongly unless it is one last x (checkWildcard),
//     and a negated wildcard ("!=1.2.x") matches nothing at all.
//
// The tokens are split exactly as ParseRange splits them (a space right
// after '<', '>' or '=' does not separate), so nothing else changes.
func checkOperatorsA(expr string) error {
	for _, part := range splitLikeParseRange(expr) {
		if part == "||" {
			continue
		}
		if len(part) == 1 && (part[0] < '0' || part[0] > '9') {
			return fmt.Errorf("unexpected %q", part)
		}
		i := strings.IndexAny(part, "0123456789")
		if i < 0 {
			// ParseRange reports this one itself, with its own wording.
			continue
		}
		op, ver := part[:i], part[i:]
		if !allowedOperatorsA[op] {
			return fmt.Errorf("unsupported operator %q in %q; Syntax A accepts =, ==, !=, !, >, >=, <, <=", op, part)
		}
		if err := checkWildcard(ver); err != nil {
			return err
		}
		if (op == "!=" || op == "!") && strings.HasSuffix(ver, ".x") {
			return fmt.Errorf("%q would match no version (ParseRange joins its two halves with AND); write the two ranges joined with ||, e.g. \"<1.2.0 || >=1.3.0\" for \"!=1.2.x\"", part)
		}
		if len(part) == 1 {
			return fmt.Errorf("%q is not a version", part)
		}
	}
	return nil
}

// checkWildcard accepts the wildcard the cheat sheet describes: one x
// standing for the last segment (1.2.x, 1.x). ParseRange reads other
// spellings wrongly instead of failing: "1.x.3" as ">=1.0.3", "1.x.x" as
// "1.0.x".
func checkWildcard(v string) error {
	core := v
	if i := strings.IndexAny(core, "-+"); i >= 0 {
		core = core[:i] // an x in a pre-release or build suffix is not a wildcard
	}
	segs := strings.Split(core, ".")
	for i, seg := range segs {
		if strings.Contains(seg, "x") && (seg != "x" || i != len(segs)-1) {
			return fmt.Errorf("%q: the wildcard x stands for one last segment, as in 1.2.x or 1.x", v)
		}
	}
	return nil
}

// splitLikeParseRange mirrors blang/semver's unexported splitAndTrim, but
// keeps the one-character tokens that splitAndTrim drops.
func splitLikeParseRange(s string) []string {
	var parts []string
	last := 0
	var lastChar byte
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == ' ' && lastChar != '>' && lastChar != '<' && lastChar != '=':
			if last < i {
				parts = append(parts, s[last:i])
			}
			last = i + 1
		case s[i] != ' ':
			lastChar = s[i]
		}
	}
	if last < len(s) {
		parts = append(parts, s[last:])
	}
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, " ", "")
	}
	return parts
}

// hintA names the valid spelling of constructs the Syntax A cheat sheet
// lists as unsupported.
func hintA(expr string) string {
	switch {
	case strings.Contains(expr, "&&"):
		return "AND is whitespace in Syntax A: write \">=1.0.0 <2.0.0\""
	case strings.Contains(expr, "~") || strings.Contains(expr, "^"):
		return "tilde and caret ranges are not supported: write an explicit range such as \">=1.2.3 <1.3.0\""
	case strings.Contains(expr, " - "):
		return "hyphen ranges are not supported: write \">=1.0.0 <=2.0.0\""
	case strings.Contains(expr, "X") || strings.Contains(expr, "*"):
		return "only a lowercase x is a wildcard: write \"1.2.x\""
	case strings.Contains(expr, ","):
		return "Syntax A separates AND terms with whitespace, not commas"
	case strings.Contains(expr, "(") || strings.Contains(expr, ")"):
		return "Syntax A has no grouping: AND binds tighter than ||"
	}
	return ""
}

// hintB names the valid spelling of constructs the Syntax B cheat sheet
// lists as unsupported.
func hintB(expr string) string {
	switch {
	case strings.Contains(expr, "||"):
		return "Syntax B has no OR; a Supervisor constraint is one comma-separated AND list"
	case strings.Contains(expr, "=="):
		return "Syntax B does not accept ==: write \"=9.0.0.0\" or just \"9.0.0.0\""
	case strings.Contains(expr, "&&"):
		return "AND is a comma in Syntax B: write \">9.0.0.0, <9.1.0.0\""
	case strings.Contains(expr, "(") || strings.Contains(expr, ")"):
		return "Syntax B has no grouping"
	case strings.Contains(strings.TrimSpace(expr), " ") && !strings.Contains(expr, ","):
		return "separate AND terms with commas in Syntax B: write \">9.0.0.0, <9.1.0.0\""
	case strings.Contains(expr, "x") || strings.Contains(expr, "*"):
		return "Syntax B has no wildcards: write \"~>9.0\" or an explicit range"
	}
	return ""
}
