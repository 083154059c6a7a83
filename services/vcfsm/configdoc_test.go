package vcfsm_test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/cli"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/configuration.md from the binaries' flag sets")

// binaries are every binary of the project, as packages relative to this
// module, in the order docs/configuration.md lists them.
var binaries = []string{"./cmd/vcfsm", "../lifecycle/cmd/lifecycle", "../compatibility/cmd/compatibility",
	"../renderer/cmd/renderer", "../precheck/cmd/precheck", "../gateway/cmd/gateway",
	"../precheck/cmd/samplehook", "../lifecycle/cmd/demodepot", "./cmd/devcerts", "../../cli/cmd/vcfctl"}

// built holds the binaries, built once per test run into a directory
// TestMain removes.
var built struct {
	once sync.Once
	dir  string
	out  []byte
	err  error
}

func buildBinaries(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "vcfsm-binaries-")
		if built.err != nil {
			return
		}
		built.out, built.err = exec.Command("go", append([]string{"build", "-o", built.dir + "/"}, binaries...)...).CombinedOutput()
	})
	require.NoError(t, built.err, "%s", built.out)
	return built.dir
}

func removeBinaries() {
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
}

type flagDoc struct{ name, arg, usage, def string }

var defaultSuffix = regexp.MustCompile(` \(default (.*)\)$`)

// parseUsage reads flag.PrintDefaults output: "  -name type" lines, each
// followed by its indented usage lines.
func parseUsage(out string) []flagDoc {
	var docs []flagDoc
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "  -"):
			name, arg, _ := strings.Cut(strings.TrimPrefix(line, "  -"), " ")
			name, inline, _ := strings.Cut(name, "\t")
			docs = append(docs, flagDoc{name: name, arg: arg, usage: strings.TrimSpace(inline)})
		case strings.HasPrefix(line, "    \t") && len(docs) > 0:
			d := &docs[len(docs)-1]
			d.usage = strings.TrimSpace(d.usage + " " + strings.TrimSpace(line))
		}
	}
	for i := range docs {
		if m := defaultSuffix.FindStringSubmatch(docs[i].usage); m != nil {
			docs[i].def = strings.Trim(m[1], `"`)
			docs[i].usage = strings.TrimSuffix(docs[i].usage, m[0])
		}
	}
	return docs
}

const configHeader = `# Configuration of every binary

<!-- Generated from the binaries' own flag sets by
     go test ./services/vcfsm -run TestConfigurationDoc -update-docs
     (make docs); TestConfigurationDoc fails when this file is stale. -->

Every binary parses its flags the same way (` + "`platform/cli`" + `, peterbourgon/ff):
the command line wins over the environment variable listed here, which wins over
the ` + "`--config`" + ` file (one ` + "`name value`" + ` per line, the flag names without dashes).
` + "`--version`" + ` (command line only) prints the version, the commit and the Go version.
` + "`make run ARGS=\"--http-listen 127.0.0.1:18080\"`" + ` passes flags to the all-in-one.
` + "`vcfctl`" + ` is configured by its contexts and ` + "`VCFCTL_*`" + ` variables (cli/README.md).
`

func renderConfigDoc(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(configHeader)
	for _, p := range binaries {
		name := filepath.Base(p)
		if name == "vcfctl" {
			continue
		}
		cmd := exec.Command(filepath.Join(dir, name), "-h")
		cmd.Dir = t.TempDir()
		out, _ := cmd.CombinedOutput() // -h exits 0 or, where flags continue on error, 1
		require.Contains(t, string(out), "Usage of "+name+":", "%s -h", name)
		fmt.Fprintf(&b, "\n## %s\n\n| flag | environment | default | |\n| --- | --- | --- | --- |\n", name)
		for _, d := range parseUsage(string(out)) {
			env := "`" + cli.EnvName(d.name) + "`"
			if d.name == cli.VersionFlag {
				env = "(command line only)"
			}
			def := ""
			if d.def != "" {
				def = "`" + d.def + "`"
			}
			fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", d.name, env, def, strings.ReplaceAll(d.usage, "|", `\|`))
		}
	}
	return b.String()
}

// docs/configuration.md lists every flag of every binary with its
// environment variable; it is generated from the flag sets, and this test
// fails when it is stale (issue 16 §7).
func TestConfigurationDoc(t *testing.T) {
	got := renderConfigDoc(t, buildBinaries(t))
	for _, want := range []string{"`--http-listen` | `VCFSM_HTTP_LISTEN`", "`--grpc-listen` | `VCFSM_GRPC_LISTEN`", "## demodepot", "`--listen` | `VCFSM_LISTEN` | `127.0.0.1:5000`", "`--download-stall-timeout`"} {
		require.Contains(t, got, want)
	}
	path := filepath.Join("..", "..", "docs", "configuration.md")
	if *updateDocs {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o600))
	}
	have, err := os.ReadFile(path)
	require.NoError(t, err, "docs/configuration.md is missing: run make docs")
	require.Equal(t, got, string(have), "docs/configuration.md is stale: run make docs")
}
