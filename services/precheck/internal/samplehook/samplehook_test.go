package samplehook

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type reply struct {
	status      int
	contentType string
	body        string
}

func call(t *testing.T, h http.Handler, method, path, auth string) reply {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(`{"check":"ready"}`))
	require.NoError(t, err)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: string(b)}
}

func TestHandlerAnswers(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		method string
		path   string
		auth   string
		want   reply
	}{
		{name: "default: compatible", cfg: Config{}, method: "GET", path: "/check",
			want: reply{200, "application/json", "{\"results\":[]}\n"}},
		{name: "results", cfg: Config{Answers: File{Answer: Answer{Results: []Result{{"WARNING", "deprecated"}, {"INFO", "fine"}}}}}, method: "POST", path: "/check",
			want: reply{200, "application/json", `{"results":[{"severity":"WARNING","message":"deprecated"},{"severity":"INFO","message":"fine"}]}` + "\n"}},
		{name: "status and raw body", cfg: Config{Answers: File{Answer: Answer{Status: 503, Body: "<html>down</html>", ContentType: "text/html"}}}, method: "GET", path: "/check",
			want: reply{503, "text/html", "<html>down</html>"}},
		{name: "raw body defaults to text/plain", cfg: Config{Answers: File{Answer: Answer{Body: "not json"}}}, method: "GET", path: "/x",
			want: reply{200, "text/plain; charset=utf-8", "not json"}},
		{name: "answers by path", cfg: Config{Answers: File{Paths: map[string]Answer{"ucs/v2/compatibility": {Results: []Result{{"ERROR", "PVC not bound"}}}}}}, method: "POST", path: "/ucs/v2/compatibility",
			want: reply{200, "application/json", `{"results":[{"severity":"ERROR","message":"PVC not bound"}]}` + "\n"}},
		{name: "other paths get the default", cfg: Config{Answers: File{Paths: map[string]Answer{"a": {Status: 500}}}}, method: "GET", path: "/b",
			want: reply{200, "application/json", "{\"results\":[]}\n"}},
		{name: "the expected token", cfg: Config{Token: "t0k"}, method: "GET", path: "/check", auth: "Bearer t0k",
			want: reply{200, "application/json", "{\"results\":[]}\n"}},
		{name: "another token", cfg: Config{Token: "t0k"}, method: "GET", path: "/check", auth: "Bearer other",
			want: reply{401, "text/plain; charset=utf-8", "unauthenticated: the bearer token is not the one this hook accepts\n"}},
		{name: "no token", cfg: Config{Token: "t0k"}, method: "GET", path: "/check",
			want: reply{401, "text/plain; charset=utf-8", "unauthenticated: the bearer token is not the one this hook accepts\n"}},
		{name: "PUT", cfg: Config{}, method: "PUT", path: "/check",
			want: reply{405, "text/plain; charset=utf-8", "method PUT not allowed: use GET or POST\n"}},
		{name: "a delayed answer still arrives", cfg: Config{Answers: File{Answer: Answer{Delay: Duration(20 * time.Millisecond), Results: []Result{{"INFO", "late"}}}}}, method: "GET", path: "/check",
			want: reply{200, "application/json", `{"results":[{"severity":"INFO","message":"late"}]}` + "\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, call(t, NewHandler(tc.cfg), tc.method, tc.path, tc.auth))
		})
	}
}

func TestHangNeverAnswers(t *testing.T) {
	srv := httptest.NewServer(NewHandler(Config{Answers: File{Answer: Answer{Hang: true}}}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/check", nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// TestHandlerLogsRequestsWithoutToken: the sample does what the seed asks
// of hook authors, log the request and the answer.
func TestHandlerLogsRequestsWithoutToken(t *testing.T) {
	var buf bytes.Buffer
	h := NewHandler(Config{Logger: slog.New(slog.NewJSONHandler(&buf, nil)), Answers: File{Answer: Answer{Results: []Result{{"INFO", "logged"}}}}})
	call(t, h, "POST", "/check", "Bearer secret-token")
	log := buf.String()
	require.NotContains(t, log, "secret-token")
	require.Contains(t, log, "Bearer [redacted]")
	require.Contains(t, log, `{\"check\":\"ready\"}`)
	require.Contains(t, log, `"status":200`)
	require.Contains(t, log, "logged")
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	f, err := LoadFile(write("a.yaml", `
status: 200
delay: 150ms
results:
  - severity: WARNING
    message: Custom resource X will be deprecated in the target version.
paths:
  slow:
    hang: true
  broken:
    status: 500
    body: oops
`))
	require.NoError(t, err)
	require.Equal(t, File{
		Answer: Answer{Status: 200, Delay: Duration(150 * time.Millisecond), Results: []Result{{"WARNING", "Custom resource X will be deprecated in the target version."}}},
		Paths:  map[string]Answer{"slow": {Hang: true}, "broken": {Status: 500, Body: "oops"}},
	}, f)

	f, err = LoadFile(write("b.json", `{"results":[{"severity":"ERROR","message":"no"}]}`))
	require.NoError(t, err)
	require.Equal(t, []Result{{"ERROR", "no"}}, f.Results)

	_, err = LoadFile(write("c.yaml", "resluts: []\n"))
	require.ErrorContains(t, err, `unknown field "resluts"`)
	_, err = LoadFile(write("d.yaml", "delay: soon\n"))
	require.ErrorContains(t, err, "delay")
	_, err = LoadFile(filepath.Join(dir, "missing.yaml"))
	require.ErrorContains(t, err, "answers file")

	b, err := json.Marshal(Duration(1500 * time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, `"1.5s"`, string(b))
}

// The health check answers at once even when every hook answer is held
// back or refused; every other path is still the hook.
func TestHealthBypassesTheHook(t *testing.T) {
	h := WithHealth(NewHandler(Config{Answers: File{Answer: Answer{Status: 503, Delay: Duration(time.Hour)}}, Token: "secret-token"}))
	require.Equal(t, reply{200, textPlain, "ok\n"}, call(t, h, "GET", HealthPath, ""))
	require.Equal(t, http.StatusUnauthorized, call(t, h, "POST", HealthPath, "").status, "only GET is the health check")
	require.Equal(t, http.StatusUnauthorized, call(t, h, "GET", "/check", "").status)
}
