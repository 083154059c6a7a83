package vcfctl_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// normalisers replace what changes from run to run (ids, times, ports,
// digests, revisions) with fixed text of the same width, so tables keep
// their alignment.
var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "00000000-0000-0000-0000-000000000000"},
	{regexp.MustCompile(`\b[0-9a-f]{16}-[0-9a-f]{8}\b`), "0000000000000000-00000000"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`), "2000-01-01T00:00:00Z"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`), "2000-01-01 00:00:00"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:55555"},
	{regexp.MustCompile(`sha256:[0-9a-f]{64}`), "sha256:<digest>"},
	{regexp.MustCompile(`"revision":\s*"\d+"`), `"revision":"1"`},
	{regexp.MustCompile(`revision: "\d+"`), `revision: "1"`},
}

func normalise(s string) string {
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// canonicalJSON compacts and re-indents JSON: protojson varies its
// whitespace between builds on purpose.
func canonicalJSON(t *testing.T, s string) string {
	t.Helper()
	var c, out bytes.Buffer
	require.NoError(t, json.Compact(&c, []byte(s)), "%s", s)
	require.NoError(t, json.Indent(&out, c.Bytes(), "", "  "))
	return out.String() + "\n"
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o750))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o600))
		return
	}
	want, err := os.ReadFile(path) //nolint:gosec // the test's own files
	require.NoError(t, err, "missing golden file: run go test -run %s -update", t.Name())
	require.Equal(t, string(want), got, "golden %s differs (go test -run %s -update rewrites it)", name, t.Name())
}

// Table, JSON and YAML output of list, get, plan and history, compared
// with golden files after normalising ids, times, ports and digests.
func TestGoldenOutput(t *testing.T) {
	w := newWorld(t)
	w.login(t)
	w.ok(t, "service", "create", w.publish(t, v1), "--wait")
	out := w.ok(t, "service", "activate", "arcturus.galaxy.com", "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait")
	require.Contains(t, out, "Accepting these access grants:\n{\n", "the rendered grants are printed before they are accepted")
	require.Contains(t, out, `"Arcturus Administrator"`)
	src2 := w.publish(t, v2)

	// -o json is the REST answer as the API gives it.
	direct := w.box.Do(t, http.MethodGet, "/v2/vcf-services?page=1&pageSize=25", nil)
	require.Equal(t, http.StatusOK, direct.Status)
	require.Equal(t, canonicalJSON(t, string(direct.Body)), canonicalJSON(t, w.ok(t, "service", "list", "-o", "json")))

	commands := map[string][]string{
		"list":    {"service", "list"},
		"get":     {"service", "get", "arcturus.galaxy.com"},
		"plan":    {"service", "plan", "arcturus.galaxy.com", "--source", src2},
		"history": {"service", "history", "arcturus.galaxy.com"},
	}
	for _, step := range []string{"before", "after"} {
		if step == "after" {
			// History after an upgrade has more to show.
			w.ok(t, "service", "upgrade", "arcturus.galaxy.com", "--source", src2, "--accept-plan-grants", "--wait")
		}
		for name, args := range commands {
			if (step == "after") != (name == "history") {
				continue
			}
			for _, format := range []string{"table", "json", "yaml"} {
				out := w.ok(t, append(args, "-o", format)...)
				if format == "json" {
					out = canonicalJSON(t, out)
				}
				golden(t, name+"."+format, normalise(out))
			}
		}
	}
}
