package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Finding is one fixed port in test code; File is relative to the tree
// checked.
type Finding struct {
	File string
	Line int
	Msg  string
}

// checkTree checks every Go file of test code under root.
func checkTree(root string, bins binaries) ([]Finding, error) {
	var findings []Finding
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "gen" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		found, err := checkFile(path, bins)
		if err != nil {
			return err
		}
		for _, f := range found {
			f.File = filepath.ToSlash(rel)
			findings = append(findings, f)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", root, err)
	}
	return findings, nil
}

// checkFile reports the fixed ports of one file, or nothing when the file
// is not test code.
func checkFile(path string, bins binaries) ([]Finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse: %w", err)
	}
	if !isTestCode(path, f) {
		return nil, nil
	}
	c := &checker{fset: fset, bins: bins, exec: importName(f, "os/exec")}
	walk(f, c.visit)
	sort.SliceStable(c.findings, func(i, j int) bool { return c.findings[i].Line < c.findings[j].Line })
	return c.findings, nil
}

// isTestCode: a _test.go file, or a file of a test helper package (one
// that imports "testing").
func isTestCode(path string, f *ast.File) bool {
	return strings.HasSuffix(path, "_test.go") || importName(f, "testing") != ""
}

// importName is the name f refers to the package at path by ("" when f
// does not import it).
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p != path {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return path[strings.LastIndex(path, "/")+1:]
	}
	return ""
}

// checker collects the findings of one file.
type checker struct {
	fset     *token.FileSet
	bins     binaries
	exec     string // the file's name for os/exec; "" when not imported
	findings []Finding
}

func (c *checker) report(pos token.Pos, format string, args ...any) {
	c.findings = append(c.findings, Finding{Line: c.fset.Position(pos).Line, Msg: fmt.Sprintf(format, args...)})
}

// walk calls visit for every node under root with the nodes enclosing it,
// outermost first.
func walk(root ast.Node, visit func(n ast.Node, parents []ast.Node)) {
	var stack []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		visit(n, stack)
		stack = append(stack, n)
		return true
	})
}

func (c *checker) visit(n ast.Node, parents []ast.Node) {
	switch n := n.(type) {
	case *ast.BasicLit:
		if n.Kind == token.STRING {
			c.checkLiteral(n, parents)
		}
	case *ast.CallExpr:
		c.checkCommand(n, parents)
	}
}

// listenSetting is a listen address named inside a string: --listen=ADDR,
// VCFSM_METRICS_LISTEN=ADDR, listen: ADDR (YAML).
var listenSetting = regexp.MustCompile(`(?i)[\w-]*listen[\w-]*\s*[=:]\s*["']?([^\s"',]+)`)

// checkLiteral reports a string literal that is a listen address with a
// fixed port.
func (c *checker) checkLiteral(lit *ast.BasicLit, parents []ast.Node) {
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return
	}
	for _, m := range listenSetting.FindAllStringSubmatch(s, -1) {
		if fixedPort(m[1]) {
			c.report(lit.Pos(), "fixed listen address %q: listen on port 0 and read the bound address back", m[0])
			return
		}
	}
	if len(parents) == 0 || !fixedPort(s) {
		return
	}
	if why := listenContext(lit, parents[len(parents)-1]); why != "" {
		c.report(lit.Pos(), "fixed listen address %q (%s): listen on port 0 and read the bound address back", s, why)
	}
}

// listenContext says why lit, a direct child of parent, is a listen
// address ("" when it is not one).
func listenContext(lit *ast.BasicLit, parent ast.Node) string {
	switch p := parent.(type) {
	case *ast.CallExpr:
		name := lastName(p.Fun)
		if strings.HasPrefix(name, "Listen") {
			return "argument of " + name
		}
		if name == "Setenv" && len(p.Args) == 2 && p.Args[1] == lit {
			if k := stringValue(p.Args[0]); strings.Contains(strings.ToUpper(k), "LISTEN") {
				return k
			}
		}
		return followsListenFlag(p.Args, lit)
	case *ast.CompositeLit:
		return followsListenFlag(p.Elts, lit)
	case *ast.KeyValueExpr:
		if k, ok := p.Key.(*ast.Ident); ok && p.Value == lit && isListenName(k.Name) {
			return k.Name
		}
	case *ast.AssignStmt:
		for i, r := range p.Rhs {
			if r == lit && i < len(p.Lhs) && isListenName(lastName(p.Lhs[i])) {
				return lastName(p.Lhs[i])
			}
		}
	case *ast.ValueSpec:
		for i, v := range p.Values {
			if v == lit && i < len(p.Names) && isListenName(p.Names[i].Name) {
				return p.Names[i].Name
			}
		}
	}
	return ""
}

// followsListenFlag names the --…listen flag lit follows in list ("" when
// it follows none).
func followsListenFlag(list []ast.Expr, lit *ast.BasicLit) string {
	for i := 1; i < len(list); i++ {
		if list[i] == lit && isListenFlag(stringValue(list[i-1])) {
			return stringValue(list[i-1])
		}
	}
	return ""
}

// isListenFlag: -listen, --listen, --metrics-listen…
func isListenFlag(s string) bool {
	name := strings.TrimLeft(s, "-")
	return strings.HasPrefix(s, "-") && (name == "listen" || strings.HasSuffix(name, "-listen"))
}

// isListenName: a field or variable holding a listen address (Listen,
// GRPCListen, metricsListen, http.Server's Addr).
func isListenName(name string) bool {
	return name == "Addr" || strings.Contains(strings.ToLower(name), "listen")
}

// fixedPort reports an address ("host:port", ":port", a URL, or a comma-
// separated list of them) with a port other than 0.
func fixedPort(s string) bool {
	for _, addr := range strings.Split(s, ",") {
		addr = strings.TrimSpace(addr)
		if i := strings.Index(addr, "://"); i >= 0 {
			addr = addr[i+len("://"):]
		}
		if i := strings.IndexAny(addr, "/?#"); i >= 0 {
			addr = addr[:i]
		}
		if i := strings.LastIndex(addr, "@"); i >= 0 {
			addr = addr[i+1:]
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			continue
		}
		if n, err := strconv.Atoi(port); err == nil && n != 0 {
			return true
		}
	}
	return false
}

// lastName is the last name of an identifier or selector: Listen for
// net.Listen, GRPCListen for cfg.GRPCListen.
func lastName(e ast.Expr) string {
	switch f := e.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// stringValue is the value of a string literal ("" for anything else).
func stringValue(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}
