package vcfctl_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// bashCompletionPackage is the bash-completion package's main script
// (make test installs the package: make test-debs).
const bashCompletionPackage = "/usr/share/bash-completion/bash_completion"

// The bash script completes in a real bash, with the bash-completion
// package and without it: commands, service names asked from the server,
// what to render only in the second slot, context names, --until values.
func TestBashCompletion(t *testing.T) {
	_, err := os.Stat(bashCompletionPackage)
	require.NoError(t, err, "the bash-completion package is missing: 'make test-debs' installs it")
	w := newWorld(t)
	w.login(t)
	w.ok(t, "service", "create", w.publish(t, v1), "--wait")
	help := w.ok(t, "completion", "--help")
	require.Contains(t, help, "vcfctl completion bash > ~/.local/share/bash-completion/completions/vcfctl", "install steps with the package")
	require.Contains(t, help, "source <(vcfctl completion bash)", "and without it")

	script := filepath.Join(w.tmp, "vcfctl.bash")
	require.NoError(t, os.WriteFile(script, []byte(w.ok(t, "completion", "bash")), 0o600))
	bin := filepath.Join(w.tmp, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o750))
	self, err := os.Executable()
	require.NoError(t, err)
	require.NoError(t, os.Symlink(self, filepath.Join(bin, "vcfctl")), "this test binary runs as vcfctl (TestMain)")

	cases := []struct {
		line      string
		want, not []string
	}{
		{"vcfctl serv", []string{"service"}, nil},
		{"vcfctl service get arc", []string{"arcturus.galaxy.com"}, nil},
		{"vcfctl service render ", []string{"arcturus.galaxy.com"}, []string{"values"}},
		{"vcfctl service render arcturus.galaxy.com ", []string{"values", "resources", "grants", "provenance"}, []string{"arcturus.galaxy.com"}},
		{"vcfctl service upgrade ", []string{"arcturus.galaxy.com"}, nil},
		{"vcfctl context use ", []string{"box"}, nil},
		{"vcfctl service list --context ", []string{"box"}, nil},
		{"vcfctl service watch arcturus.galaxy.com --until Heal", []string{"Healthy"}, nil},
	}
	for _, pkg := range []bool{false, true} {
		for _, c := range cases {
			got := complete(t, w, bin, script, pkg, c.line)
			for _, want := range c.want {
				require.Contains(t, got, want, "%q (bash-completion package: %t)", c.line, pkg)
			}
			for _, not := range c.not {
				require.NotContains(t, got, not, "%q (bash-completion package: %t)", c.line, pkg)
			}
		}
	}
}

// complete runs bash as a shell completing line with the cursor at its
// end, and returns what it offers.
func complete(t *testing.T, w *world, bin, script string, pkg bool, line string) []string {
	t.Helper()
	prelude := ""
	if pkg {
		prelude = "source " + bashCompletionPackage + "\n"
	}
	prog := prelude + "source " + script + `
COMP_LINE="$1"
COMP_POINT=${#COMP_LINE}
read -r -a COMP_WORDS <<< "$COMP_LINE"
if [[ "$COMP_LINE" == *" " ]]; then COMP_WORDS+=(""); fi
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
__start_vcfctl vcfctl
printf '%s\n' "${COMPREPLY[@]}"
`
	cmd := exec.CommandContext(t.Context(), "bash", "--norc", "--noprofile", "-c", prog, "complete", line)
	cmd.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + w.env["HOME"], "XDG_CONFIG_HOME=" + w.env["XDG_CONFIG_HOME"], runAsCLI + "=1"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		got = append(got, strings.TrimSpace(l))
	}
	return got
}
