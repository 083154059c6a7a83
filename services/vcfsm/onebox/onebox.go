// Package onebox starts the whole system in-process on real loopback
// sockets for end-to-end tests: every service, the gateway, a fresh bbolt
// store in a temporary directory and a known token.
package onebox

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/logging"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// The bearer tokens every onebox accepts: Token is an admin's; the others
// carry the role they are named after. Services call each other with
// ServiceToken.
const (
	Token         = "onebox-test-token-0123456789abcdef"
	OperatorToken = "onebox-operator-token-0123456789ab"
	ViewerToken   = "onebox-viewer-token-0123456789abcd"
	ServiceToken  = "onebox-service-token-0123456789abc"
)

// Box is a running system.
type Box struct {
	// URL is the REST base, e.g. http://127.0.0.1:41234.
	URL string
	// GRPCAddr serves every gRPC service.
	GRPCAddr string
	// DataDir is the system's data directory.
	DataDir string
	// MetricsURL serves the system's Prometheus metrics.
	MetricsURL string
	Client     *http.Client
	Sys        *app.System

	stopOnce sync.Once
	stopErr  error
}

// Stop shuts the system down (once; the test's cleanup calls it too), so
// a benchmark can start another system on the same data directory.
func (b *Box) Stop() error {
	b.stopOnce.Do(func() { b.stopErr = b.Sys.Stop() })
	return b.stopErr
}

// Option adjusts the configuration before start.
type Option func(*app.Config)

// Start runs a system until the test ends.
func Start(t testing.TB, opts ...Option) *Box {
	t.Helper()
	var cfg app.Config
	cfg.Common.LogFormat, cfg.Common.LogLevel = "text", "info"
	cfg.Common.Tokens = cli.NewSecret("e2e:" + Token + ",ops:operator:" + OperatorToken + ",audit:viewer:" + ViewerToken + ",internal:service:" + ServiceToken)
	cfg.Common.ServiceToken = cli.NewSecret(ServiceToken)
	cfg.GRPCListen = "127.0.0.1:0"
	cfg.HTTPListen = "127.0.0.1:0"
	cfg.MetricsListen = "127.0.0.1:0"
	cfg.Lifecycle.DataDir = t.TempDir()
	// Tests and REST benchmarks drive the API faster than a person would;
	// the per-principal rate limit has its own tests (services/gateway).
	cfg.Gateway.Limits.RatePerSecond, cfg.Gateway.Limits.RateBurst = 1e6, 1e6
	for _, o := range opts {
		o(&cfg)
	}
	sys, err := app.Start(context.Background(), cfg, logging.Discard())
	require.NoError(t, err)
	box := &Box{URL: sys.Scheme + "://" + sys.HTTPAddr, GRPCAddr: sys.GRPCAddr, DataDir: cfg.Lifecycle.DataDir, MetricsURL: "http://" + sys.MetricsAddr + "/metrics", Sys: sys}
	t.Cleanup(func() { require.NoError(t, box.Stop()) })
	client := &http.Client{Timeout: 30 * time.Second}
	if sys.Scheme == "https" {
		// --dev-tls: trust the CA the system generated.
		raw, err := os.ReadFile(filepath.Join(cfg.Lifecycle.DataDir, "tls", "ca.crt"))
		require.NoError(t, err)
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM(raw))
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	box.Client = client
	box.waitReady(t)
	return box
}

// waitReady waits until /readyz answers 200: readiness is checked in the
// background (the store, the peers' gRPC health), so a system just started
// may say NOT_SERVING for a moment; every test starts from a ready one.
func (b *Box) waitReady(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := b.Client.Get(b.URL + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the system did not become ready within 30s (last: %v)", readyzState(resp, err))
		}
		<-time.After(20 * time.Millisecond)
	}
}

func readyzState(resp *http.Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// Response is a REST answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v.
func (r Response) JSON(t testing.TB, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(r.Body, v), "body: %s", r.Body)
}

// Do sends a request with the box's token; body is JSON-encoded unless it
// is already []byte.
func (b *Box) Do(t testing.TB, method, path string, body any) Response {
	t.Helper()
	return b.DoWithToken(t, Token, method, path, body)
}

// DoWithToken sends a request with the given token ("" sends none).
func (b *Box) DoWithToken(t testing.TB, token, method, path string, body any) Response {
	t.Helper()
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		require.NoError(t, err)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, b.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json;version=41.0.0-alpha")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := b.Client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: raw}
}
