package main

import (
	"errors"
	"fmt"
	"go/ast"
	"path"
	"regexp"
	"strings"
)

// listenFlag is a flag of one of the project's binaries that makes it
// listen on its default address unless the flag is given.
type listenFlag struct {
	Name    string // without dashes: metrics-listen
	Env     string // VCFSM_METRICS_LISTEN
	Default string // 127.0.0.1:9100
}

// binaries maps a binary's name to its listen flags that have a default.
type binaries map[string][]listenFlag

// flagRow is one row of docs/configuration.md's flag tables:
// | `--metrics-listen` | `VCFSM_METRICS_LISTEN` | `127.0.0.1:9100` | … |
var flagRow = regexp.MustCompile("^\\| `--([a-z0-9-]+)` \\| `?([A-Z0-9_]*)`?[^|]*\\| `?([^`|]*?)`? *\\|")

// parseBinaries reads the binaries and their listen flags from the
// configuration reference: a "## name" heading per binary, then its flag
// table.
func parseBinaries(doc string) (binaries, error) {
	bins := binaries{}
	current := ""
	for _, line := range strings.Split(doc, "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			current = strings.TrimSpace(name)
			bins[current] = nil
			continue
		}
		m := flagRow.FindStringSubmatch(line)
		if m == nil || current == "" {
			continue
		}
		name, env, def := m[1], m[2], strings.TrimSpace(m[3])
		if (name == "listen" || strings.HasSuffix(name, "-listen")) && def != "" {
			bins[current] = append(bins[current], listenFlag{Name: name, Env: env, Default: def})
		}
	}
	if len(bins) == 0 {
		return nil, errors.New("no binary (## name) with a flag table found")
	}
	return bins, nil
}

// exitsAtOnce are the flags with which a binary prints something and exits
// without listening.
var exitsAtOnce = map[string]bool{"-h": true, "-help": true, "--help": true, "-version": true, "--version": true}

// checkCommand reports exec.Command(Context) starting one of the project's
// binaries without every listen flag that has a default address.
func (c *checker) checkCommand(call *ast.CallExpr, parents []ast.Node) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || c.exec == "" {
		return
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != c.exec {
		return
	}
	first := 0
	switch sel.Sel.Name {
	case "Command":
	case "CommandContext":
		first = 1
	default:
		return
	}
	if len(call.Args) <= first {
		return
	}
	scope := outermostFunc(parents)
	bin := c.binaryOf(resolveStrings(scope, call.Args[first]))
	if bin == "" {
		return
	}
	var given []string
	for _, a := range call.Args[first+1:] {
		given = append(given, resolveStrings(scope, a)...)
	}
	for _, g := range given {
		if exitsAtOnce[g] {
			return
		}
	}
	env := resolveStrings(scope, scope)
	var missing []string
	for _, f := range c.bins[bin] {
		if !flagGiven(f, given, env) {
			missing = append(missing, fmt.Sprintf("--%s (default %s)", f.Name, f.Default))
		}
	}
	if len(missing) > 0 {
		c.report(call.Pos(), "starts %s without %s: give every listen flag port 0 (127.0.0.1:0)", bin, strings.Join(missing, ", "))
	}
}

// binaryOf names the project's binary among the strings a program
// expression is built from ("" when none is one).
func (c *checker) binaryOf(candidates []string) string {
	for _, s := range candidates {
		name := strings.TrimSuffix(path.Base(strings.ReplaceAll(s, `\`, "/")), ".exe")
		if _, ok := c.bins[name]; ok && len(c.bins[name]) > 0 {
			return name
		}
	}
	return ""
}

// flagGiven: the flag is among the arguments (--name, -name, --name=…) or
// its environment variable is set (NAME=…) in the same function.
func flagGiven(f listenFlag, args, env []string) bool {
	for _, a := range args {
		for _, form := range []string{"-" + f.Name, "--" + f.Name} {
			if a == form || strings.HasPrefix(a, form+"=") {
				return true
			}
		}
	}
	for _, e := range env {
		if f.Env != "" && strings.HasPrefix(e, f.Env+"=") {
			return true
		}
	}
	return false
}

// outermostFunc is the top-level function enclosing a node (its closures
// share its variables), or nil at file level.
func outermostFunc(parents []ast.Node) ast.Node {
	for _, p := range parents {
		switch p.(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			return p
		}
	}
	return nil
}

// resolveStrings collects the string literals e is built from: those
// written in e, and for an identifier, those of every value assigned to a
// variable of that name in scope (one level: bin := filepath.Join(dir,
// "vcfsm")).
func resolveStrings(scope ast.Node, e ast.Node) []string {
	out := literalsIn(e)
	id, ok := e.(*ast.Ident)
	if !ok || scope == nil {
		return out
	}
	ast.Inspect(scope, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				if lastName(l) == id.Name && len(n.Rhs) == len(n.Lhs) {
					out = append(out, literalsIn(n.Rhs[i])...)
				}
			}
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if name.Name == id.Name && i < len(n.Values) {
					out = append(out, literalsIn(n.Values[i])...)
				}
			}
		}
		return true
	})
	return out
}

// literalsIn is every string literal under n.
func literalsIn(n ast.Node) []string {
	var out []string
	if n == nil {
		return nil
	}
	ast.Inspect(n, func(n ast.Node) bool {
		if e, ok := n.(ast.Expr); ok {
			if s := stringValue(e); s != "" {
				out = append(out, s)
			}
		}
		return true
	})
	return out
}
