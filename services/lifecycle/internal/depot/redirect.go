package depot

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// Downloads follow a redirect only to the host the download started at,
// or to a host the administrator allowed (Config.RedirectHosts, for
// mirrors and registries whose blobs live on a storage host). A depot
// must not be able to point the Service Manager at other hosts of the
// provider's network, and what another host answers is never shown: an
// error answer from a host other than the source's loses its body here,
// before any layer above could quote it into errorDetails, which viewers
// read.
//
// The rule sits in the transport so that tarball downloads (net/http's
// client) and registry pulls (go-containerregistry's own client) share it:
// both clients follow redirects, and a request made for a redirect
// carries the response that caused it (http.Request.Response).

// redirectTransport enforces the redirect rule on every request.
type redirectTransport struct {
	base    http.RoundTripper
	allowed []string // host or host:port entries of Config.RedirectHosts
}

// firstHost is the host the chain of redirects that led to req started at.
func firstHost(req *http.Request) string {
	for req.Response != nil && req.Response.Request != nil {
		req = req.Response.Request
	}
	return req.URL.Host
}

func (t *redirectTransport) allows(origin, host, hostname string) bool {
	if strings.EqualFold(host, origin) {
		return true
	}
	for _, a := range t.allowed {
		if strings.EqualFold(a, host) || strings.EqualFold(a, hostname) {
			return true
		}
	}
	return false
}

func (t *redirectTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	origin := firstHost(req)
	if req.Response != nil && !t.allows(origin, req.URL.Host, req.URL.Hostname()) {
		return nil, fmt.Errorf("%w: refusing a redirect from %s to another host, %s (allow it with --source-redirect-hosts)",
			bundle.ErrFetch, origin, req.URL.Host)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || strings.EqualFold(req.URL.Host, origin) || resp.StatusCode < 400 {
		return resp, err
	}
	// An error answer from an allowed other host: its status is kept, its
	// body (an internal page, a token) is not.
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(strings.NewReader(""))
	resp.ContentLength = 0
	resp.Header.Del("Content-Type")
	return resp, nil
}
