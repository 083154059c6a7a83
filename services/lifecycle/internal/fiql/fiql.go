// Package fiql parses and evaluates FIQL filter expressions
// (draft-nottingham-atompub-fiql-00) as the list endpoint takes them:
//
//	lifecycleState==active
//	vendor==broadcom;status==Healthy
//	name==*arcturus*
//	(status==Healthy,status==Busy);labels.team!=platform
//
// ";" is AND, "," is OR (AND binds tighter), parentheses group. Operators:
// ==, !=, =lt=, =le=, =gt=, =ge=. "*" in an == or != argument matches any
// run of characters. Arguments may be quoted with ' or " to carry the
// reserved characters ;,() or spaces.
package fiql

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/platform/echo"
)

// ErrSyntax reports a malformed expression; the message says where.
var ErrSyntax = errors.New("invalid FIQL filter")

// Bounds of an expression. The parser recurses once per parenthesis, so
// MaxDepth bounds its stack; MaxLength bounds its work and keeps a filter
// far below what could hurt, over REST and gRPC alike.
const (
	// MaxLength is the longest expression accepted, in bytes.
	MaxLength = 4096
	// MaxDepth is the deepest nesting of parentheses accepted.
	MaxDepth = 32
)

// MaxSelector bounds a selector (a field name, labels.<key>): label keys
// are at most 253 characters.
const MaxSelector = 256

// quoteLimit bounds how much of the input an error message echoes.
const quoteLimit = 64

// Op is a comparison operator.
type Op string

// Operators.
const (
	OpEq Op = "=="
	OpNe Op = "!="
	OpLt Op = "=lt="
	OpLe Op = "=le="
	OpGt Op = "=gt="
	OpGe Op = "=ge="
)

// Node is a parsed expression.
type Node interface {
	// Eval reports whether the object behind get matches.
	Eval(get Getter) bool
	// Selectors lists every selector used, for validation.
	Selectors() []string
}

// Getter returns a field's value and whether the object has the field.
type Getter func(selector string) (string, bool)

// Comparer orders two values of a selector; nil means plain string order.
type Comparer func(selector, a, b string) int

// Constraint is one selector-operator-argument comparison.
type Constraint struct {
	Selector string
	Op       Op
	Arg      string
	compare  Comparer
}

// And matches when every child matches.
type And []Node

// Or matches when any child matches.
type Or []Node

// Eval implements Node.
func (a And) Eval(get Getter) bool {
	for _, n := range a {
		if !n.Eval(get) {
			return false
		}
	}
	return true
}

// Selectors implements Node.
func (a And) Selectors() []string { return selectors(a) }

// Eval implements Node.
func (o Or) Eval(get Getter) bool {
	for _, n := range o {
		if n.Eval(get) {
			return true
		}
	}
	return false
}

// Selectors implements Node.
func (o Or) Selectors() []string { return selectors(o) }

func selectors(nodes []Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Selectors()...)
	}
	return out
}

// Selectors implements Node.
func (c *Constraint) Selectors() []string { return []string{c.Selector} }

// Constraints lists every comparison of an expression, so a caller can
// rewrite arguments (spell an enumerated value the one way it is stored).
func Constraints(n Node) []*Constraint {
	switch t := n.(type) {
	case *Constraint:
		return []*Constraint{t}
	case And:
		return constraintsOf(t)
	case Or:
		return constraintsOf(t)
	}
	return nil
}

func constraintsOf(nodes []Node) []*Constraint {
	var out []*Constraint
	for _, n := range nodes {
		out = append(out, Constraints(n)...)
	}
	return out
}

// Eval implements Node. A missing field matches only !=.
func (c *Constraint) Eval(get Getter) bool {
	v, ok := get(c.Selector)
	if !ok {
		return c.Op == OpNe
	}
	switch c.Op {
	case OpEq:
		return match(c.Arg, v)
	case OpNe:
		return !match(c.Arg, v)
	}
	cmp := strings.Compare(v, c.Arg)
	if c.compare != nil {
		cmp = c.compare(c.Selector, v, c.Arg)
	}
	switch c.Op {
	case OpLt:
		return cmp < 0
	case OpLe:
		return cmp <= 0
	case OpGt:
		return cmp > 0
	case OpGe:
		return cmp >= 0
	}
	return false
}

// match compares with * wildcards.
func match(pattern, v string) bool {
	if !strings.Contains(pattern, "*") {
		return pattern == v
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(v, parts[0]) {
		return false
	}
	v = v[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(v, p)
		if i < 0 {
			return false
		}
		v = v[i+len(p):]
	}
	return strings.HasSuffix(v, last) && len(v) >= len(last)
}

// Parse parses expr; compare (optional) orders values for =lt= and friends.
func Parse(expr string, compare Comparer) (Node, error) {
	if len(expr) > MaxLength {
		return nil, fmt.Errorf("%w: %d bytes long, more than the limit of %d", ErrSyntax, len(expr), MaxLength)
	}
	p := &parser{in: expr, compare: compare}
	p.skipSpace()
	if p.eof() {
		return nil, fmt.Errorf("%w: empty expression", ErrSyntax)
	}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if !p.eof() {
		return nil, p.errorf("unexpected %q", p.in[p.pos])
	}
	return n, nil
}

type parser struct {
	in      string
	pos     int
	depth   int
	compare Comparer
}

func (p *parser) eof() bool { return p.pos >= len(p.in) }

func (p *parser) skipSpace() {
	for !p.eof() && p.in[p.pos] == ' ' {
		p.pos++
	}
}

func (p *parser) errorf(format string, args ...any) error {
	in := p.in
	if len(in) > quoteLimit {
		in = in[:quoteLimit] + "…"
	}
	return fmt.Errorf("%w at position %d of %q: %s", ErrSyntax, p.pos+1, in, fmt.Sprintf(format, args...))
}

func (p *parser) or() (Node, error) {
	first, err := p.and()
	if err != nil {
		return nil, err
	}
	nodes := Or{first}
	for {
		p.skipSpace()
		if p.eof() || p.in[p.pos] != ',' {
			break
		}
		p.pos++
		n, err := p.and()
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 1 {
		return first, nil
	}
	return nodes, nil
}

func (p *parser) and() (Node, error) {
	first, err := p.term()
	if err != nil {
		return nil, err
	}
	nodes := And{first}
	for {
		p.skipSpace()
		if p.eof() || p.in[p.pos] != ';' {
			break
		}
		p.pos++
		n, err := p.term()
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 1 {
		return first, nil
	}
	return nodes, nil
}

func (p *parser) term() (Node, error) {
	p.skipSpace()
	if p.eof() {
		return nil, p.errorf("expected a constraint or '('")
	}
	if p.in[p.pos] == '(' {
		if p.depth >= MaxDepth {
			return nil, p.errorf("parentheses nested deeper than %d", MaxDepth)
		}
		p.depth++
		defer func() { p.depth-- }()
		p.pos++
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.eof() || p.in[p.pos] != ')' {
			return nil, p.errorf("expected ')'")
		}
		p.pos++
		return n, nil
	}
	return p.constraint()
}

func isSelectorChar(c byte) bool {
	return c == '.' || c == '_' || c == '-' || c == '/' ||
		(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func (p *parser) constraint() (Node, error) {
	start := p.pos
	for !p.eof() && isSelectorChar(p.in[p.pos]) {
		p.pos++
	}
	sel := p.in[start:p.pos]
	if sel == "" {
		return nil, p.errorf("expected a selector (a field name such as status or labels.team)")
	}
	if len(sel) > MaxSelector {
		// Callers name unknown selectors in their errors: one this long
		// is no field, and is not repeated.
		return nil, p.errorf("a selector of %d bytes, more than the limit of %d", len(sel), MaxSelector)
	}
	op, err := p.operator()
	if err != nil {
		return nil, err
	}
	arg, err := p.argument()
	if err != nil {
		return nil, err
	}
	if (op != OpEq && op != OpNe) && strings.Contains(arg, "*") {
		return nil, p.errorf("wildcard * is only allowed with == and !=")
	}
	return &Constraint{Selector: sel, Op: op, Arg: arg, compare: p.compare}, nil
}

func (p *parser) operator() (Op, error) {
	rest := p.in[p.pos:]
	for _, op := range []Op{OpEq, OpNe, OpLt, OpLe, OpGt, OpGe} {
		if strings.HasPrefix(rest, string(op)) {
			p.pos += len(op)
			return op, nil
		}
	}
	if strings.HasPrefix(rest, "=") {
		if end := strings.Index(rest[1:], "="); end >= 0 {
			return "", p.errorf("unsupported operator %s: use ==, !=, =lt=, =le=, =gt= or =ge=", echo.Quote(rest[:end+2]))
		}
	}
	return "", p.errorf("expected an operator (==, !=, =lt=, =le=, =gt=, =ge=)")
}

func (p *parser) argument() (string, error) {
	if p.eof() {
		return "", p.errorf("expected a value")
	}
	if q := p.in[p.pos]; q == '\'' || q == '"' {
		end := strings.IndexByte(p.in[p.pos+1:], q)
		if end < 0 {
			return "", p.errorf("unterminated quoted value")
		}
		arg := p.in[p.pos+1 : p.pos+1+end]
		p.pos += end + 2
		return arg, nil
	}
	start := p.pos
	for !p.eof() {
		c := p.in[p.pos]
		if c == ';' || c == ',' || c == ')' || c == '(' {
			break
		}
		p.pos++
	}
	arg := strings.TrimRight(p.in[start:p.pos], " ")
	if arg == "" {
		return "", p.errorf("expected a value")
	}
	return arg, nil
}
