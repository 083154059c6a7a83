package main

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func testBinaries(t *testing.T) binaries {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("testdata", "configuration.md"))
	require.NoError(t, err)
	bins, err := parseBinaries(string(doc))
	require.NoError(t, err)
	return bins
}

// The listen flags with a default address, per binary, as the
// configuration reference lists them.
func TestParseBinaries(t *testing.T) {
	require.Equal(t, binaries{
		"vcfsm": {
			{Name: "grpc-listen", Env: "VCFSM_GRPC_LISTEN", Default: "127.0.0.1:9090"},
			{Name: "http-listen", Env: "VCFSM_HTTP_LISTEN", Default: "127.0.0.1:8080"},
			{Name: "metrics-listen", Env: "VCFSM_METRICS_LISTEN", Default: "127.0.0.1:9100"},
		},
		"lifecycle": {{Name: "listen", Env: "VCFSM_LISTEN", Default: "127.0.0.1:9091"}},
		"devcerts":  nil,
	}, testBinaries(t))

	_, err := parseBinaries("# nothing here\n")
	require.ErrorContains(t, err, "no binary")
}

// Every finding in testdata/src is on a line with a want comment (// want
// and a regexp in backquotes) and matches it, and every such line has a
// finding: the files hold both what the check must report and what it must
// leave alone.
func TestFindingsAreTheWantedOnes(t *testing.T) {
	bins := testBinaries(t)
	files, err := filepath.Glob(filepath.Join("testdata", "src", "*.go"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			findings, err := checkFile(path, bins)
			require.NoError(t, err)
			got := map[int][]string{}
			for _, f := range findings {
				got[f.Line] = append(got[f.Line], f.Msg)
			}
			want := wants(t, path)
			for line, re := range want {
				require.Len(t, got[line], 1, "%s:%d wants one finding matching %s", path, line, re)
				require.Regexp(t, re, got[line][0], "%s:%d", path, line)
			}
			for line, msgs := range got {
				require.Contains(t, want, line, "%s:%d: unexpected finding %q", path, line, msgs)
			}
		})
	}
}

var wantComment = regexp.MustCompile("^// want `(.*)`$")

// wants maps each line of path with a `// want` comment to its regexp.
func wants(t *testing.T, path string) map[int]*regexp.Regexp {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	require.NoError(t, err)
	out := map[int]*regexp.Regexp{}
	for _, g := range f.Comments {
		for _, c := range g.List {
			if m := wantComment.FindStringSubmatch(c.Text); m != nil {
				out[fset.Position(c.Pos()).Line] = regexp.MustCompile(m[1])
			}
		}
	}
	return out
}

// Over a tree: file:line for each finding, relative to the tree, exit
// status 1; testdata, gen and dot directories and production code are not
// read.
func TestRunReportsFileAndLine(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{filepath.Join("testdata", "tree")}, &out, &errOut)
	require.Equal(t, 1, code, errOut.String())
	require.Equal(t, `svc/a_test.go:10: fixed listen address "127.0.0.1:9100" (argument of Listen): listen on port 0 and read the bound address back`+"\n", out.String())
	require.Contains(t, errOut.String(), "1 fixed port(s) in test code")
}

func TestRunCleanTreeAndErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok_test.go"), []byte("package ok\n\nimport \"net\"\n\nvar _, _ = net.Listen(\"tcp\", \"127.0.0.1:0\")\n"), 0o600))
	config := filepath.Join("testdata", "configuration.md")

	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-config", config, dir}, &out, &errOut), errOut.String())
	require.Empty(t, out.String())

	errOut.Reset()
	require.Equal(t, 2, run([]string{dir}, &out, &errOut), "no docs/configuration.md in the tree")
	require.Contains(t, errOut.String(), "the binaries' listen flags")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "broken_test.go"), []byte("package ok\n\nfunc {"), 0o600))
	errOut.Reset()
	require.Equal(t, 2, run([]string{"-config", config, dir}, &out, &errOut))
	require.Contains(t, errOut.String(), "broken_test.go")

	errOut.Reset()
	require.Equal(t, 2, run(nil, &out, &errOut))
	require.True(t, strings.HasPrefix(errOut.String(), "usage: portcheck"), errOut.String())
}
