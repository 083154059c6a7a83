package console

import (
	"bufio"
	"context"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
)

const (
	adminToken    = "console-admin-token-0123456789"
	operatorToken = "console-operator-token-012345"
	viewerToken   = "console-viewer-token-01234567"
)

// fakeLifecycle answers WatchService on a real gRPC server: two events per
// known service, NotFound for any other id. It records the tokens it got.
type fakeLifecycle struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	tokens chan string
}

func (f *fakeLifecycle) WatchService(req *lifecyclev1.WatchServiceRequest, stream lifecyclev1.LifecycleService_WatchServiceServer) error {
	md, _ := metadata.FromIncomingContext(stream.Context())
	f.tokens <- strings.Join(md.Get("authorization"), ",")
	if !strings.HasPrefix(req.GetId(), "known-") {
		return status.Errorf(codes.NotFound, "service %s not found", req.GetId())
	}
	for _, st := range []string{"Busy", "Healthy"} {
		if err := stream.Send(&lifecyclev1.WatchServiceResponse{Id: req.GetId(), Status: st, LifecycleState: "active"}); err != nil {
			return err
		}
	}
	return nil
}

func newHandler(t *testing.T) (http.Handler, *fakeLifecycle) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	fake := &fakeLifecycle{tokens: make(chan string, 16)}
	lifecyclev1.RegisterLifecycleServiceServer(srv, fake)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	tokens, err := auth.ParseTokens("root:admin:" + adminToken + ",ops:operator:" + operatorToken + ",audit:viewer:" + viewerToken)
	require.NoError(t, err)
	h, err := New(Options{Tokens: tokens, Lifecycle: lifecyclev1.NewLifecycleServiceClient(conn)})
	require.NoError(t, err)
	return h, fake
}

func get(h http.Handler, path, token string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestFilesAreServedWithTheirTypeAndSecurityHeaders(t *testing.T) {
	h, _ := newHandler(t)
	cases := []struct {
		path, contentType, contains string
	}{
		{"/ui/", "text/html; charset=utf-8", `<script type="module" src="/ui/js/app.js">`},
		{"/ui/index.html", "text/html; charset=utf-8", "<main"},
		{"/ui/console.css", "text/css; charset=utf-8", "prefers-color-scheme: dark"},
		{"/ui/js/app.js", "text/javascript; charset=utf-8", "import"},
		{"/ui/js/pages/index.js", "text/javascript; charset=utf-8", "export const pages"},
		{"/ui/icon.svg", "image/svg+xml", "<svg"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			rec := get(h, c.path, "")
			require.Equal(t, http.StatusOK, rec.Code)
			require.Equal(t, c.contentType, rec.Header().Get("Content-Type"))
			require.Contains(t, rec.Body.String(), c.contains)
			require.Equal(t, contentSecurityPolicy, rec.Header().Get("Content-Security-Policy"))
			require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
			require.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"))
			require.Equal(t, "no-referrer", rec.Header().Get("Referrer-Policy"))
			require.Empty(t, rec.Header().Get("Strict-Transport-Security"), "no HSTS over plain HTTP")

			again := get(h, c.path, "", "If-None-Match", rec.Header().Get("ETag"))
			require.Equal(t, http.StatusNotModified, again.Code, "an unchanged file is revalidated, not sent again")
		})
	}
	missing := get(h, "/ui/nothing.js", "")
	require.Equal(t, http.StatusNotFound, missing.Code)
	require.Contains(t, missing.Body.String(), "the console starts at /ui/")
}

// The CSP allows no inline script or style and no string-to-DOM sinks:
// the embedded files must not need any, or the browser would refuse them.
func TestFilesNeedNothingTheCSPForbids(t *testing.T) {
	inline := []*regexp.Regexp{
		regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`),                                       // inline script
		regexp.MustCompile(`(?i)\sstyle\s*=`),                                                // style attributes
		regexp.MustCompile(`<style`),                                                         // style elements
		regexp.MustCompile(`\son[a-z]+\s*=\s*"`),                                             // inline handlers in HTML
		regexp.MustCompile(`\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write`), // string sinks
		regexp.MustCompile(`\beval\(|new Function\(`),
		regexp.MustCompile(`(?:src|href)\s*=\s*["']?(?:https?:)?//|from\s+["'](?:https?:)?//|url\(\s*["']?(?:https?:)?//|fetch\(\s*["'\x60](?:https?:)?//`), // another origin
	}
	err := fs.WalkDir(webFS, "web", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".svg") {
			return err
		}
		raw, err := webFS.ReadFile(p)
		require.NoError(t, err)
		for _, re := range inline {
			require.Nil(t, re.FindIndex(raw), "%s: %s found (%q)", p, re, re.Find(raw))
		}
		return nil
	})
	require.NoError(t, err)
}

func TestIdentityNamesTheRoleAndItsPermissions(t *testing.T) {
	h, _ := newHandler(t)
	cases := []struct {
		token, principal, role string
		permissions            []string
	}{
		{adminToken, "root", "admin", []string{"services.read", "services.write", "inventory.write", "admin"}},
		{operatorToken, "ops", "operator", []string{"services.read", "services.write"}},
		{viewerToken, "audit", "viewer", []string{"services.read"}},
	}
	for _, c := range cases {
		rec := get(h, IdentityPath, c.token)
		require.Equal(t, http.StatusOK, rec.Code, c.role)
		var id Identity
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &id))
		require.Equal(t, Identity{Principal: c.principal, Role: c.role, Permissions: c.permissions}, id)
	}
	rec := get(h, IdentityPath, "not-a-valid-token-at-all")
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.Contains(t, rec.Body.String(), "missing or invalid bearer token")
}

func TestWatchFanInMergesTheStreamsWithTheCallersToken(t *testing.T) {
	h, fake := newHandler(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+WatchPath+"?id=known-a&id=known-b&id=gone-c&id=known-a", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+viewerToken)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))

	got := map[string][]string{}
	var failures []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var line struct {
			Result *struct{ ID, Status string } `json:"result"`
			Error  *struct {
				Code    int
				Message string
				ID      string
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "%s", sc.Text())
		switch {
		case line.Result != nil:
			got[line.Result.ID] = append(got[line.Result.ID], line.Result.Status)
		case line.Error != nil:
			require.Equal(t, int(codes.NotFound), line.Error.Code)
			failures = append(failures, line.Error.ID+": "+line.Error.Message)
		}
	}
	require.NoError(t, sc.Err())
	require.Equal(t, map[string][]string{"known-a": {"Busy", "Healthy"}, "known-b": {"Busy", "Healthy"}}, got, "each service once, its events in order")
	require.Equal(t, []string{"gone-c: service gone-c not found"}, failures)
	for range 3 {
		require.Equal(t, "Bearer "+viewerToken, <-fake.tokens, "lifecycle is called with the caller's own token")
	}
}

func TestWatchFanInRefusesBadIDs(t *testing.T) {
	h, _ := newHandler(t)
	many := strings.Repeat("&id=x", MaxWatchIDs+1)
	cases := []struct{ query, says string }{
		{"", "give at least one service id"},
		{"?id=", `is not a service id`},
		{"?" + many[1:], "at most 128"},
	}
	for _, c := range cases {
		rec := get(h, WatchPath+c.query, viewerToken)
		require.Equal(t, http.StatusBadRequest, rec.Code, c.query)
		require.Contains(t, rec.Body.String(), c.says)
	}
}

func TestPublicAndWatchRoutes(t *testing.T) {
	cases := []struct {
		method, path  string
		public, watch bool
	}{
		{http.MethodGet, "/ui/", true, false},
		{http.MethodGet, "/ui/js/app.js", true, false},
		{http.MethodHead, "/ui/console.css", true, false},
		{http.MethodGet, IdentityPath, false, false},
		{http.MethodGet, WatchPath, false, true},
		{http.MethodPost, "/ui/", false, false},
		{http.MethodGet, "/v2/vcf-services", false, false},
	}
	for _, c := range cases {
		r := httptest.NewRequest(c.method, c.path, nil)
		require.Equal(t, c.public, Public(r), "%s %s public", c.method, c.path)
		require.Equal(t, c.watch, IsWatch(r), "%s %s watch", c.method, c.path)
	}
}

// index.html preloads exactly the modules the first page (the services
// list) runs: app.js's static imports and the list page's, all at once
// instead of import by import. Other pages load when first shown.
func TestIndexPreloadsTheFirstPagesModules(t *testing.T) {
	index, err := webFS.ReadFile("web/index.html")
	require.NoError(t, err)
	require.Contains(t, string(index), `<script type="module" src="/ui/js/app.js">`)
	staticImport := regexp.MustCompile(`(?m)^import [^;]*? from '(\./[^']+|\.\./[^']+)';`)
	need := map[string]bool{}
	var walk func(file string)
	walk = func(file string) {
		raw, err := webFS.ReadFile("web/" + file)
		require.NoError(t, err, file)
		for _, m := range staticImport.FindAllStringSubmatch(string(raw), -1) {
			dep := path.Join(path.Dir(file), m[1])
			if !need[dep] {
				need[dep] = true
				walk(dep)
			}
		}
	}
	walk("js/app.js")
	need["js/pages/services.js"] = true
	walk("js/pages/services.js")
	var want, got []string
	for f := range need {
		want = append(want, "/ui/"+f)
	}
	for _, m := range regexp.MustCompile(`<link rel="modulepreload" href="([^"]+)">`).FindAllStringSubmatch(string(index), -1) {
		got = append(got, m[1])
	}
	sort.Strings(want)
	require.Equal(t, want, got, "index.html's modulepreload links")
}

// Over HTTPS the console also asks the browser to keep to HTTPS (HSTS).
func TestHSTSOverHTTPS(t *testing.T) {
	h, _ := newHandler(t)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "https://console.example/ui/", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "max-age=31536000", rec.Header().Get("Strict-Transport-Security"))
}
