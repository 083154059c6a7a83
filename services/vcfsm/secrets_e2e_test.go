package vcfsm_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Secret values set in the environment; none may ever be printed.
var secretEnv = map[string]string{
	"VCFSM_TOKENS":        "leak:admin:SECRET-TOKENS-VALUE-0123456789",
	"VCFSM_SERVICE_TOKEN": "SECRET-SERVICE-TOKEN-0123456789",
	"VCFSM_HOOK_TOKEN":    "SECRET-HOOK-TOKEN-0123456789",
	"VCFSM_TOKEN":         "SECRET-SAMPLEHOOK-TOKEN-0123456789",
}

func secretsIn(out string) []string {
	var found []string
	for k, v := range secretEnv {
		_, val, _ := strings.Cut(v, "admin:")
		if val == "" {
			val = v
		}
		if strings.Contains(out, val) {
			found = append(found, k)
		}
	}
	return found
}

// Every binary, run with a mistyped flag and the secrets in its
// environment, prints usage and no secret; a malformed token entry is
// reported without its token.
func TestNoSecretInOutput(t *testing.T) {
	dir := t.TempDir()
	pkgs := []string{"./cmd/vcfsm", "../lifecycle/cmd/lifecycle", "../compatibility/cmd/compatibility", "../renderer/cmd/renderer",
		"../precheck/cmd/precheck", "../gateway/cmd/gateway", "../precheck/cmd/samplehook"}
	out, err := exec.Command("go", append([]string{"build", "-o", dir + "/"}, pkgs...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	env := os.Environ()
	for k, v := range secretEnv {
		env = append(env, k+"="+v)
	}
	for _, p := range pkgs {
		bin := filepath.Join(dir, filepath.Base(p))
		cmd := exec.Command(bin, "--no-such-flag")
		cmd.Env, cmd.Dir = env, t.TempDir()
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%s exits non-zero on a mistyped flag", p)
		require.Contains(t, string(out), "flag provided but not defined: -no-such-flag", p)
		require.Contains(t, string(out), "-log-level", "%s prints its usage", p)
		require.Empty(t, secretsIn(string(out)), "%s printed secrets:\n%s", p, out)
	}

	cmd := exec.Command(filepath.Join(dir, "vcfsm"), "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "VCFSM_TOKENS=leak:operater:SECRET-TOKENS-VALUE-0123456789", "VCFSM_SERVICE_TOKEN="+secretEnv["VCFSM_SERVICE_TOKEN"])
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "--tokens: token entry 1: the second field is not a role (admin, operator, viewer or service)")
	require.Empty(t, secretsIn(string(out)), "%s", out)

	// Issue 25 §7: a tokens-file entry written principal:token:role
	// printed the token as an "unknown role"; the error names the line.
	tokensFile := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(tokensFile, []byte("# admins\nroot:admin:root-token-0123456789abcdef\nleak:SECRET-TOKENS-VALUE-0123456789:viewer\n"), 0o600))
	cmd = exec.Command(filepath.Join(dir, "vcfsm"), "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--tokens-file", tokensFile)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "VCFSM_SERVICE_TOKEN="+secretEnv["VCFSM_SERVICE_TOKEN"])
	out, err = cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "--tokens-file "+tokensFile+": line 3: the second field is not a role")
	require.Empty(t, secretsIn(string(out)), "%s", out)
}

// Every binary answers --version with its version, commit and Go version,
// and exits 0 without starting (issue 16 §7); VCFSM_VERSION in the
// environment is not mistaken for it.
func TestEveryBinaryAnswersVersion(t *testing.T) {
	dir := buildBinaries(t)
	pkgs := binaries
	for _, p := range pkgs {
		name := filepath.Base(p)
		cmd := exec.Command(filepath.Join(dir, name), "--version")
		cmd.Dir = t.TempDir()
		out, err := cmd.Output()
		require.NoError(t, err, "%s --version exits 0", name)
		require.Regexp(t, `^`+name+` \S+ \(commit \S+, go[0-9.]+\S*\)\n$`, string(out), name)
	}
	cmd := exec.Command(filepath.Join(dir, "devcerts"), "--dir", filepath.Join(t.TempDir(), "tls"))
	cmd.Env = append(os.Environ(), "VCFSM_VERSION=v9-image-tag")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NotContains(t, string(out), "commit", "VCFSM_VERSION is not --version")
}
