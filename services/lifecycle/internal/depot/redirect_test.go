package depot

import (
	"context"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// A depot may redirect a download within its own host; to another host
// only when the administrator allowed that host, and what another host
// answers with an error is never shown (issue 25 §6).
func TestDownloadRedirectsStayOnTheSourceHost(t *testing.T) {
	fx := newFixture(t)
	other := bundletest.NewTarServer(t)
	other.Add("myservice.tar", fx.tarPath)
	other.Handle("internal", statusHandler(http.StatusForbidden, "internal page: token=SECRET-0123456789"))
	fx.srv.Handle("moved.tar", redirectHandler(fx.tarURL))
	fx.srv.Handle("elsewhere.tar", redirectHandler(other.URL("myservice.tar")))
	fx.srv.Handle("internal.tar", redirectHandler(other.URL("internal")))
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(fx.srv.CA.PEM))
	require.True(t, pool.AppendCertsFromPEM(other.CA.PEM))
	trustBoth := func(c *Config) { c.RootCAs = pool }
	otherHost, err := url.Parse(other.URL(""))
	require.NoError(t, err)
	allowOther := func(c *Config) { c.RedirectHosts = []string{otherHost.Host} }
	sourceHost, err := url.Parse(fx.srv.URL(""))
	require.NoError(t, err)

	s := newTestStore(t)
	b, err := s.fetcher(t, trustBoth).Fetch(context.Background(), fx.srv.URL("moved.tar"), nil)
	require.NoError(t, err, "a redirect on the source's own host is followed")
	require.Equal(t, fx.digest, b.Digest)

	s = newTestStore(t)
	_, err = s.fetcher(t, trustBoth).Fetch(context.Background(), fx.srv.URL("elsewhere.tar"), nil)
	require.ErrorIs(t, err, bundle.ErrFetch)
	require.ErrorContains(t, err, "refusing a redirect from "+sourceHost.Host+" to another host, "+otherHost.Host+" (allow it with --source-redirect-hosts)")
	require.Zero(t, other.Hits("myservice.tar"), "the other host got no request")
	s.requireOnly(t)

	b, err = s.fetcher(t, trustBoth, allowOther).Fetch(context.Background(), fx.srv.URL("elsewhere.tar"), nil)
	require.NoError(t, err, "an allowed mirror is followed")
	require.Equal(t, fx.digest, b.Digest)

	s = newTestStore(t)
	_, err = s.fetcher(t, trustBoth, allowOther).Fetch(context.Background(), fx.srv.URL("internal.tar"), nil)
	require.ErrorIs(t, err, bundle.ErrFetch)
	require.ErrorContains(t, err, "403 Forbidden")
	require.NotContains(t, err.Error(), "SECRET", "another host's answer is never shown")
	require.NotContains(t, err.Error(), "internal page")
}

// Registry pulls go through go-containerregistry's own client, which
// follows redirects by net/http's default rule: the transport refuses
// them the same way, and drops another host's error body.
func TestRedirectTransport(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/blob" {
			_, _ = io.WriteString(w, "blob")
			return
		}
		http.Error(w, "internal page: token=SECRET", http.StatusNotFound)
	}))
	defer other.Close()
	depot := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/self":
			http.Redirect(w, r, "/data", http.StatusTemporaryRedirect)
		case "/data":
			_, _ = io.WriteString(w, "data")
		case "/missing":
			http.Error(w, "no such blob", http.StatusNotFound)
		default:
			http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
		}
	}))
	defer depot.Close()
	otherURL, err := url.Parse(other.URL)
	require.NoError(t, err)
	get := func(allowed []string, path string) (int, string, error) {
		c := &http.Client{Transport: &redirectTransport{base: http.DefaultTransport, allowed: allowed}}
		resp, err := c.Get(depot.URL + path)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body), nil
	}
	code, body, err := get(nil, "/self")
	require.NoError(t, err)
	require.Equal(t, "data", body, "same host: followed")
	require.Equal(t, http.StatusOK, code)
	_, _, err = get(nil, "/blob")
	require.ErrorContains(t, err, "refusing a redirect from "+depot.Listener.Addr().String()+" to another host, "+otherURL.Host)
	code, body, err = get([]string{otherURL.Hostname()}, "/blob")
	require.NoError(t, err, "a host name allows every port of it")
	require.Equal(t, "blob", body)
	require.Equal(t, http.StatusOK, code)
	code, body, err = get([]string{otherURL.Host}, "/secret")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code, "the status of another host's error is kept")
	require.Empty(t, body, "its body is not")
	code, body, err = get(nil, "/missing")
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "no such blob", "the source's own error answers are left alone")
}
