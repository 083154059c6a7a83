package hook

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
)

// ann builds source annotations from suffix/value pairs.
// TestDispatchLogsRequestAndResponseWithoutToken logs every call at info
// level, the bodies (written by the services, possibly large or
// sensitive) only at debug level and truncated, and never the token.
func TestDispatchLogsRequestAndResponseWithoutToken(t *testing.T) {
	long := strings.Repeat("x", 3*logBodyLimit)
	srv := startHook(t, nil, jsonAnswer(`{"results":[{"severity":"WARNING","message":"logged answer"}],"padding":"`+long+`"}`))
	resolver, err := NewResolver([]string{testHost + "=" + srv.addr()}, nil)
	require.NoError(t, err)
	dispatch := func(level slog.Level) string {
		var buf bytes.Buffer
		d, err := NewDispatcher(Options{Token: testToken, Resolver: resolver, Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level}))})
		require.NoError(t, err)
		res := d.Dispatch(context.Background(), &precheckv1.DispatchHookRequest{
			SourcePackageYaml: packageYAML(t, httpHook("_method", "POST")),
			TargetPackageYaml: packageYAML(t, ann("_data", `{"logged":"request body"}`)),
			Namespace:         testNS,
		})
		require.False(t, res.GetBlocked(), res.GetFailure())
		return buf.String()
	}

	info := dispatch(slog.LevelInfo)
	require.Contains(t, info, `"url":"http://`+testHost+`:80/check"`)
	require.Contains(t, info, `"method":"POST"`)
	require.Contains(t, info, `"status":200`)
	require.NotContains(t, info, "request body", "no body at info level")
	require.NotContains(t, info, "logged answer")
	require.NotContains(t, info, testToken)

	debug := dispatch(slog.LevelDebug)
	require.NotContains(t, debug, testToken)
	require.Contains(t, debug, "Bearer [redacted]")
	require.Contains(t, debug, `{\"logged\":\"request body\"}`)
	require.Contains(t, debug, "logged answer")
	require.Contains(t, debug, "[truncated at 2048 bytes]")
	require.NotContains(t, debug, long[:logBodyLimit+1], "bodies are cut")
}

// TestDispatchAllKeepsOrderAndIsolatesFailures runs a mixed fan-out: each
// result lands at its request's index, and a failing hook affects only
// its own result.
func TestDispatchAllKeepsOrderAndIsolatesFailures(t *testing.T) {
	ok := startHook(t, nil, jsonAnswer(`{"results":[{"severity":"INFO","message":"fine"}]}`))
	bad := startHook(t, nil, statusAnswer(http.StatusBadGateway, "upstream down"))
	resolver, err := NewResolver([]string{
		"ok." + testNS + ".svc.cluster.local=" + ok.addr(),
		"bad." + testNS + ".svc.cluster.local=" + bad.addr(),
	}, nil)
	require.NoError(t, err)
	d, err := NewDispatcher(Options{Token: testToken, Resolver: resolver, Concurrency: 2})
	require.NoError(t, err)

	mk := func(svc string) *precheckv1.DispatchHookRequest {
		return &precheckv1.DispatchHookRequest{
			SourcePackageYaml: packageYAML(t, ann("_service", svc, "_url", "check")),
			TargetPackageYaml: packageYAML(t, ann()),
			Namespace:         testNS,
			Supervisor:        svc,
		}
	}
	reqs := []*precheckv1.DispatchHookRequest{mk("ok"), mk("bad"), mk("ok"), {}, mk("ok")}
	res, err := d.DispatchAll(context.Background(), reqs)
	require.NoError(t, err)
	require.Len(t, res, len(reqs))
	for i, want := range []string{"ok", "bad", "ok", "", "ok"} {
		require.Equal(t, want, res[i].GetSupervisor(), "result %d", i)
	}
	require.False(t, res[0].GetBlocked())
	require.True(t, res[1].GetBlocked())
	require.Contains(t, res[1].GetFailure(), "upstream down")
	require.True(t, res[3].GetBlocked())
	require.Contains(t, res[3].GetFailure(), "the source version's Package could not be loaded")
	require.Len(t, ok.requests(), 3)
	require.Len(t, bad.requests(), 1)
}

func TestDispatchAllRefusesTooManyRequests(t *testing.T) {
	d, err := NewDispatcher(Options{Token: testToken})
	require.NoError(t, err)
	_, err = d.DispatchAll(context.Background(), make([]*precheckv1.DispatchHookRequest, MaxRequests+1))
	require.ErrorIs(t, err, ErrInvalidRequest)
	require.ErrorContains(t, err, "10001 requests in one call; at most 10000")
}

// TestDispatchAllCutsAHangingHookAtItsTimeout shows one hook that never
// answers is cut at the configured timeout while the others complete.
func TestDispatchAllCutsAHangingHookAtItsTimeout(t *testing.T) {
	fast := startHook(t, nil, jsonAnswer(`{"results":[]}`))
	hang := startHook(t, nil, hangAnswer)
	resolver, err := NewResolver([]string{
		"fast." + testNS + ".svc.cluster.local=" + fast.addr(),
		"hang." + testNS + ".svc.cluster.local=" + hang.addr(),
	}, nil)
	require.NoError(t, err)
	d, err := NewDispatcher(Options{Token: testToken, Resolver: resolver, Timeout: 250 * time.Millisecond})
	require.NoError(t, err)
	mk := func(svc string) *precheckv1.DispatchHookRequest {
		return &precheckv1.DispatchHookRequest{
			SourcePackageYaml: packageYAML(t, ann("_service", svc, "_url", "check")),
			TargetPackageYaml: packageYAML(t, ann()),
			Namespace:         testNS,
		}
	}
	res, err := d.DispatchAll(context.Background(), []*precheckv1.DispatchHookRequest{mk("fast"), mk("hang"), mk("fast")})
	require.NoError(t, err)
	require.False(t, res[0].GetBlocked(), res[0].GetFailure())
	require.False(t, res[2].GetBlocked(), res[2].GetFailure())
	require.True(t, res[1].GetBlocked())
	require.Equal(t, "endpoint timed out: http://hang."+testNS+".svc.cluster.local:80/check did not answer within 250ms", res[1].GetFailure())
}

func TestNewDispatcherNeedsAToken(t *testing.T) {
	_, err := NewDispatcher(Options{})
	require.ErrorContains(t, err, "bearer token is required")
}

// TestHTTPSTrustsOnlyTheSecretsCA: even when the machine's trust store
// trusts the hook's certificate, only the Secret's ca.crt counts.
func TestHTTPSTrustsOnlyTheSecretsCA(t *testing.T) {
	pki := testPKI(t)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "roots.pem")
	require.NoError(t, os.WriteFile(bundle, pki.other.PEM, 0o600))
	t.Setenv("SSL_CERT_FILE", bundle)
	t.Setenv("SSL_CERT_DIR", dir)

	// The system pool now trusts the foreign certificate…
	system, err := x509.SystemCertPool()
	require.NoError(t, err)
	block, _ := pem.Decode(pki.otherCA.CertPEM)
	leaf, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: system, DNSName: testHost})
	require.NoError(t, err, "the test needs the system pool to trust the foreign CA")

	// …and the hook still refuses it, the Secret naming another CA.
	srv := startHook(t, pki.otherCA, jsonAnswer(`{"results":[]}`))
	resolver, err := NewResolver([]string{testHost + "=" + srv.addr()}, nil)
	require.NoError(t, err)
	d, err := NewDispatcher(Options{Token: testToken, Resolver: resolver})
	require.NoError(t, err)
	res := d.Dispatch(context.Background(), &precheckv1.DispatchHookRequest{
		SourcePackageYaml: packageYAML(t, httpsHook()), TargetPackageYaml: packageYAML(t, ann()),
		Namespace: testNS, Secrets: caSecret(CACertKey, pki.ca.PEM),
	})
	require.True(t, res.GetBlocked())
	require.Contains(t, res.GetFailure(), "was not issued by the CA in the ca.crt key of secret hook-ca in namespace svc-x")
	require.Empty(t, srv.requests())
}
