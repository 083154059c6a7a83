package cli

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/logging"
)

func TestParseReadsEnvironmentAndConfigFile(t *testing.T) {
	cfgFile := filepath.Join(t.TempDir(), "vcfsm.conf")
	require.NoError(t, os.WriteFile(cfgFile, []byte("log-level debug\nlog-format json\n"), 0o600))
	t.Setenv("VCFSM_LOG_FORMAT", "text")
	t.Setenv("VCFSM_TOKENS", "a:viewer:env-token-0123456789abcdef")
	var c Common
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	c.RegisterFlags(fs)
	require.NoError(t, Parse(fs, []string{"--config", cfgFile}))
	require.Equal(t, "debug", c.LogLevel, "from the config file")
	require.Equal(t, "text", c.LogFormat, "the environment wins over the config file")
	require.Equal(t, "a:viewer:env-token-0123456789abcdef", c.Tokens.Value())
	require.Equal(t, "VCFSM_GRPC_TLS_CERT", EnvName("grpc-tls-cert"))
}

func TestSecretsNeverInUsage(t *testing.T) {
	t.Setenv("VCFSM_TOKENS", "a:env-token-0123456789abcdef")
	t.Setenv("VCFSM_SERVICE_TOKEN", "svc-token-0123456789abcdef")
	var c Common
	var usage bytes.Buffer
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(&usage)
	c.RegisterFlags(fs)
	require.NoError(t, c.Tokens.Set("cli-token-0123456789abcdef"))
	require.Error(t, Parse(fs, []string{"--tokenz", "x"}))
	require.Contains(t, usage.String(), "-tokens value")
	for _, secret := range []string{"env-token", "svc-token", "cli-token"} {
		require.NotContains(t, usage.String(), secret)
	}
}

func TestSecretFiles(t *testing.T) {
	dir := t.TempDir()
	tokensFile := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokensFile, []byte("# operators\nops:operator:ops-token-0123456789abcdef\nsvc:service:svc-token-0123456789abcdef\n"), 0o600))
	svcFile := filepath.Join(dir, "service-token")
	require.NoError(t, os.WriteFile(svcFile, []byte("svc-token-0123456789abcdef\n"), 0o600))
	c := Common{TokensFile: tokensFile, ServiceTokenFile: svcFile}
	tokens, peer, err := c.Auth(dir, logging.Discard())
	require.NoError(t, err)
	require.Equal(t, "svc-token-0123456789abcdef", peer)
	id, ok := tokens.Lookup("ops-token-0123456789abcdef")
	require.True(t, ok)
	require.Equal(t, auth.Identity{Principal: "ops", Role: auth.RoleOperator}, id)

	require.NoError(t, os.Chmod(tokensFile, 0o644))
	_, _, err = c.Auth(dir, logging.Discard())
	require.ErrorContains(t, err, "--tokens-file: "+tokensFile+" has mode 0644: a secret file must be readable by its owner only")

	require.NoError(t, os.Chmod(tokensFile, 0o600))
	require.NoError(t, os.WriteFile(tokensFile, []byte("# operators\nops:operator:ops-token-0123456789abcdef\nleak:leaked-token-0123456789abcdef:viewer\n"), 0o600))
	_, _, err = c.Auth(dir, logging.Discard())
	require.EqualError(t, err, "--tokens-file "+tokensFile+": line 3: the second field is not a role (admin, operator, viewer or service): entries are principal:role:token")

	require.NoError(t, os.WriteFile(tokensFile, []byte("# nothing but comments\n"), 0o600))
	_, _, err = c.Auth(dir, logging.Discard())
	require.EqualError(t, err, "--tokens: no token given")

	require.NoError(t, os.WriteFile(tokensFile, []byte("ops:operator:ops-token-0123456789abcdef\n"), 0o600))
	c.ServiceToken = NewSecret("x")
	_, _, err = c.Auth(dir, logging.Discard())
	require.ErrorContains(t, err, "--service-token and --service-token-file exclude each other")
}

func TestVersion(t *testing.T) {
	require.True(t, VersionAsked([]string{"--listen", "127.0.0.1:0", "--version"}))
	require.True(t, VersionAsked([]string{"-version"}))
	require.False(t, VersionAsked([]string{"--", "--version"}))
	require.False(t, VersionAsked([]string{"--log-level", "debug"}))
	t.Setenv("VCFSM_VERSION", "v9-image-tag")
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	require.NoError(t, Parse(fs, nil), "VCFSM_VERSION in the environment is not --version")

	info := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123abcd"}, {Key: "vcs.modified", Value: "true"}}}
	got := versionOf("lifecycle", "", func() (*debug.BuildInfo, bool) { return info, true })
	require.Equal(t, "lifecycle v1.2.3 (commit 0123abcd+dirty, "+runtime.Version()+")", got)
	require.Equal(t, "x (devel) (commit unknown, "+runtime.Version()+")", versionOf("x", "", func() (*debug.BuildInfo, bool) { return nil, false }))
	require.Contains(t, Version("vcfsm"), runtime.Version())
	require.Equal(t, "vcfctl 2.0.0 (commit 0123abcd+dirty, "+runtime.Version()+")",
		versionOf("vcfctl", "2.0.0", func() (*debug.BuildInfo, bool) { return info, true }))
}
