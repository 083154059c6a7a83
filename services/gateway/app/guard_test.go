package app

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/logging"
)

const (
	adminToken   = "guard-admin-token-0123456789"
	viewerToken  = "guard-viewer-token-0123456789"
	serviceToken = "guard-service-token-012345678"
)

func testTokens(t *testing.T) *auth.Tokens {
	t.Helper()
	tokens, err := auth.ParseTokens("root:" + adminToken + "\naudit:viewer:" + viewerToken + "\ninternal:service:" + serviceToken)
	require.NoError(t, err)
	return tokens
}

// countingBody counts the bytes anyone read from it.
type countingBody struct {
	left int64
	read atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	n := min(int64(len(p)), b.left)
	b.left -= n
	b.read.Add(n)
	return int(n), nil
}

func (b *countingBody) Close() error { return nil }

func request(method, path, token string, body *countingBody, length int64) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	if body != nil {
		r.Body = body
		r.ContentLength = length
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	return r
}

func TestGuardRefusesBeforeReading(t *testing.T) {
	var reached atomic.Int32
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
	})
	g := newGuard(next, testTokens(t), Limits{}, logging.Discard())
	const huge = 100 << 20

	body := &countingBody{left: huge}
	w := httptest.NewRecorder()
	g.ServeHTTP(w, request(http.MethodPost, "/v2/vcf-services", "", body, huge))
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.Equal(t, `Bearer realm="vcf-service-manager"`, w.Header().Get("WWW-Authenticate"))
	require.Zero(t, body.read.Load(), "an unauthenticated body is never read")

	body = &countingBody{left: huge}
	w = httptest.NewRecorder()
	g.ServeHTTP(w, request(http.MethodPost, "/v2/vcf-services", "not-a-valid-token-at-all", body, huge))
	require.Equal(t, http.StatusUnauthorized, w.Code)
	require.Zero(t, body.read.Load())

	body = &countingBody{left: huge}
	w = httptest.NewRecorder()
	g.ServeHTTP(w, request(http.MethodPatch, "/v2/vcf-services/x", adminToken, body, huge))
	require.Equal(t, http.StatusRequestEntityTooLarge, w.Code)
	require.Contains(t, w.Body.String(), "request body exceeds the limit of 4194304 bytes (--http-max-body-bytes)")
	require.Zero(t, body.read.Load(), "a body declared too large is never read")

	body = &countingBody{left: huge}
	w = httptest.NewRecorder()
	g.ServeHTTP(w, request(http.MethodPatch, "/v2/vcf-services/x", serviceToken, body, huge))
	require.Equal(t, http.StatusForbidden, w.Code)
	require.Contains(t, w.Body.String(), `permission rest.access missing: principal \"internal\" has role service`)
	require.Zero(t, body.read.Load(), "the service role is refused at the edge")
	require.Zero(t, reached.Load(), "nothing refused reached the API")

	// A body without a declared length is cut at the cap as it is read.
	body = &countingBody{left: huge}
	w = httptest.NewRecorder()
	g.ServeHTTP(w, request(http.MethodPatch, "/v2/vcf-services/x", viewerToken, body, -1))
	require.Equal(t, int32(1), reached.Load())
	require.LessOrEqual(t, body.read.Load(), int64(DefaultMaxBodyBytes+64<<10), "reading stops at the cap")

	w = httptest.NewRecorder()
	g.ServeHTTP(w, request(http.MethodGet, "/v2/openapi.json", "", nil, 0))
	require.Equal(t, http.StatusOK, w.Code, "the API description needs no token")
}

func TestGuardQueryCap(t *testing.T) {
	g := newGuard(http.NotFoundHandler(), testTokens(t), Limits{MaxQueryBytes: 100}, logging.Discard())
	w := httptest.NewRecorder()
	g.ServeHTTP(w, request(http.MethodGet, "/v2/vcf-services?filter="+strings.Repeat("(", 200), adminToken, nil, 0))
	require.Equal(t, http.StatusRequestURITooLong, w.Code)
	require.Contains(t, w.Body.String(), "query string of 207 bytes exceeds the limit of 100 bytes (--http-max-query-bytes)")
}

func TestGuardRateLimitPerPrincipal(t *testing.T) {
	g := newGuard(http.NotFoundHandler(), testTokens(t), Limits{RatePerSecond: 0.5, RateBurst: 2}, logging.Discard())
	for range 2 {
		w := httptest.NewRecorder()
		g.ServeHTTP(w, request(http.MethodGet, "/v2/vcf-services", adminToken, nil, 0))
		require.Equal(t, http.StatusNotFound, w.Code, "within the burst")
	}
	w := httptest.NewRecorder()
	g.ServeHTTP(w, request(http.MethodGet, "/v2/vcf-services", adminToken, nil, 0))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	retry, err := strconv.Atoi(w.Header().Get("Retry-After"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, retry, 1)
	require.Contains(t, w.Body.String(), `principal \"root\" exceeded 0.5 requests per second (burst 2)`)

	w = httptest.NewRecorder()
	g.ServeHTTP(w, request(http.MethodGet, "/v2/vcf-services", viewerToken, nil, 0))
	require.Equal(t, http.StatusNotFound, w.Code, "another principal has its own bucket")
}

func TestGuardWatchCapAndIdleBound(t *testing.T) {
	release := make(chan struct{})
	ended := make(chan struct{}, 4)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("{}\n"))
		select {
		case <-release:
		case <-r.Context().Done():
		}
		ended <- struct{}{}
	})
	g := newGuard(next, testTokens(t), Limits{MaxWatches: 1, WatchIdleTimeout: time.Hour}, logging.Discard())
	first := make(chan int, 1)
	go func() {
		w := httptest.NewRecorder()
		g.ServeHTTP(w, request(http.MethodGet, "/v2/vcf-services/a/watch", adminToken, nil, 0))
		first <- w.Code
	}()
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.watches["root"] == 1
	}, 5*time.Second, 5*time.Millisecond)
	w := httptest.NewRecorder()
	g.ServeHTTP(w, request(http.MethodGet, "/v2/vcf-services/b/watch", adminToken, nil, 0))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	require.Contains(t, w.Body.String(), "already has 1 open watch streams, the limit (--max-watches)")
	close(release)
	require.Equal(t, http.StatusOK, <-first)
	<-ended

	// A stream that writes nothing for the idle bound is ended.
	quiet := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	idle := newGuard(quiet, testTokens(t), Limits{WatchIdleTimeout: 50 * time.Millisecond}, logging.Discard())
	done := make(chan struct{})
	go func() {
		idle.ServeHTTP(httptest.NewRecorder(), request(http.MethodGet, "/v2/vcf-services/a/watch", adminToken, nil, 0))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("an idle watch stream was not ended")
	}
}

// An error the watch route answers before it streams has the body every
// other error has, not the stream chunk grpc-gateway writes; events and
// errors once streaming keep their envelope.
func TestWatchErrorBeforeTheStream(t *testing.T) {
	cases := []struct {
		name   string
		status int
		writes []string
		body   string
	}{
		{"refused before streaming", http.StatusBadRequest, []string{`{"error":{"code":3,"message":"until: bad"}}`, "\n"}, `{"code":3,"message":"until: bad"}` + "\n"},
		{"streaming", http.StatusOK, []string{`{"result":{"id":"x"}}`, "\n", `{"error":{"code":14,"message":"gone"}}`, "\n"},
			`{"result":{"id":"x"}}` + "\n" + `{"error":{"code":14,"message":"gone"}}` + "\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			w := &idleWriter{ResponseWriter: rec, timer: time.NewTimer(time.Hour), idle: time.Hour}
			defer w.timer.Stop()
			w.WriteHeader(c.status)
			for _, p := range c.writes {
				n, err := w.Write([]byte(p))
				require.NoError(t, err)
				require.Len(t, p, n)
			}
			require.Equal(t, c.status, rec.Code)
			require.Equal(t, c.body, rec.Body.String())
		})
	}
}

// Every answer names the API version, refusals included.
func TestIdentityOnEveryAnswer(t *testing.T) {
	h := identify(newGuard(http.NotFoundHandler(), testTokens(t), Limits{}, logging.Discard()))
	for _, token := range []string{"", adminToken} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, request(http.MethodGet, "/v2/vcf-services", token, nil, 0))
		require.Equal(t, APIVersion, rec.Header().Get(IdentityHeader), "token %q: status %d", token, rec.Code)
	}
}

// The console's files load before sign-in; its calls need a token like
// /v2, and its watch fan-in holds a watch slot like /v2/…/watch.
func TestGuardConsoleRoutes(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	g := newGuard(next, testTokens(t), Limits{MaxWatches: 1}, logging.Discard())
	cases := []struct {
		path, token string
		want        int
	}{
		{"/ui/", "", http.StatusTeapot},
		{"/ui", "", http.StatusTeapot},
		{"/ui/js/app.js", "", http.StatusTeapot},
		{"/ui/api/identity", "", http.StatusUnauthorized},
		{"/ui/api/identity", serviceToken, http.StatusForbidden},
		{"/ui/api/identity", viewerToken, http.StatusTeapot},
		{"/ui/api/watch?id=a", "", http.StatusUnauthorized},
	}
	for _, c := range cases {
		w := httptest.NewRecorder()
		g.ServeHTTP(w, request(http.MethodGet, c.path, c.token, nil, 0))
		require.Equal(t, c.want, w.Code, "%s with %q", c.path, c.token)
	}
	require.True(t, isWatch(request(http.MethodGet, "/ui/api/watch?id=a", viewerToken, nil, 0)))
}
