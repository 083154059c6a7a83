package observability_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/logging"
	"github.com/vcfsm/vcfsm/platform/observability"
)

// The REST middleware returns the caller's request id (or a new one),
// counts by route pattern and code, and logs one line per request without
// the token or the body.
func TestHTTPHandler(t *testing.T) {
	var sink bytes.Buffer
	log, err := logging.New(&sink, "json", "info")
	require.NoError(t, err)
	tel := observability.WithTracer(nil)
	h := tel.HTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/things/") {
			observability.SetRoute(r.Context(), "/things/{id}")
			observability.SetPrincipal(r.Context(), "alice")
			require.Equal(t, "caller-id", observability.RequestID(r.Context()))
			w.WriteHeader(http.StatusCreated)
			return
		}
		http.NotFound(w, r)
	}), log)
	srv := httptest.NewServer(h)
	defer srv.Close()

	req, err := http.NewRequest(http.MethodPost, srv.URL+"/things/urn:secret-id-1", strings.NewReader(`{"password":"body-secret"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer token-secret-0123456789")
	req.Header.Set("X-Request-Id", "caller-id")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	require.Equal(t, "caller-id", resp.Header.Get("X-Request-Id"))

	resp, err = http.Get(srv.URL + "/nowhere/urn:other-id")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Regexp(t, `^[0-9a-f]{32}$`, resp.Header.Get("X-Request-Id"))

	bad, err := http.NewRequest(http.MethodGet, srv.URL+"/nowhere", nil)
	require.NoError(t, err)
	bad.Header.Set("X-Request-Id", "has spaces and \"quotes\"")
	resp, err = http.DefaultClient.Do(bad)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Regexp(t, `^[0-9a-f]{32}$`, resp.Header.Get("X-Request-Id"), "an id unfit for a log line is replaced")

	lines := strings.Split(strings.TrimSpace(sink.String()), "\n")
	require.Len(t, lines, 3)
	var first map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.Equal(t, "http request", first["msg"])
	require.Equal(t, "POST", first["method"])
	require.Equal(t, "/things/{id}", first["route"])
	require.EqualValues(t, 201, first["code"])
	require.Equal(t, "alice", first["principal"])
	require.Equal(t, "caller-id", first["request_id"])
	require.NotEmpty(t, first["duration"])
	for _, secret := range []string{"token-secret", "body-secret", "secret-id-1", "other-id"} {
		require.NotContains(t, sink.String(), secret)
	}

	require.NoError(t, testutil.GatherAndCompare(tel.Registry, strings.NewReader(`
# HELP vcfsm_http_requests_total REST requests answered, by method, route pattern and status code.
# TYPE vcfsm_http_requests_total counter
vcfsm_http_requests_total{code="201",method="POST",route="/things/{id}"} 1
vcfsm_http_requests_total{code="404",method="GET",route="unmatched"} 2
`), "vcfsm_http_requests_total"))
}

// Requests choose their method: one outside the standard set counts as
// OTHER, and the access log repeats at most 32 bytes of it (issue 25 §3:
// 2,000 random 60 KB methods made a 2 GiB /metrics).
func TestHTTPLabelsAreBounded(t *testing.T) {
	var sink bytes.Buffer
	log, err := logging.New(&sink, "json", "info")
	require.NoError(t, err)
	tel := observability.WithTracer(nil)
	h := tel.HTTPHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}), log)
	for i := range 50 {
		method := strings.Repeat(string(rune('A'+i%26)), 60<<10) + strings.Repeat("Z", i)
		req := httptest.NewRequest(http.MethodGet, "/v2/vcf-services", nil)
		req.Method = method
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	require.NoError(t, testutil.GatherAndCompare(tel.Registry, strings.NewReader(`
# HELP vcfsm_http_requests_total REST requests answered, by method, route pattern and status code.
# TYPE vcfsm_http_requests_total counter
vcfsm_http_requests_total{code="401",method="OTHER",route="unmatched"} 50
`), "vcfsm_http_requests_total"))
	lines := strings.Split(strings.TrimSpace(sink.String()), "\n")
	require.Len(t, lines, 50)
	for _, l := range lines {
		require.Less(t, len(l), 400, "one access-log line stays short: %.200s", l)
	}
	var first map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	require.Equal(t, strings.Repeat("A", 32)+"… (message cut: 61440 bytes)", first["method"])
}
