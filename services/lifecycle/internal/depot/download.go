package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"
)

const maxRedirects = 10

// newHTTPClient builds the one transport used for tarball downloads and
// registry access, trusting cfg.RootCAs (or the system roots).
func newHTTPClient(cfg Config) (http.RoundTripper, *http.Client) {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.TLSClientConfig = &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	base.ResponseHeaderTimeout = time.Minute
	t := &stallTransport{base: &redirectTransport{base: base, allowed: cfg.RedirectHosts}, limit: cfg.Stall.withDefaults()}
	client := &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			insecureAllowed := cfg.AllowInsecure && req.URL.Scheme == "http"
			if req.URL.Scheme != "https" && !insecureAllowed {
				return fmt.Errorf("refusing redirect to non-https URL %s", redactURL(req.URL))
			}
			return nil
		},
	}
	return t, client
}

// redactURL drops anything after the path: query strings of redirect
// targets often carry pre-signed tokens.
func redactURL(u *url.URL) string {
	c := *u
	c.RawQuery, c.Fragment, c.User = "", "", nil
	return c.String()
}

// download streams a tarball into a new file under TempDir, bounded by
// MaxDownloadBytes, and returns its path. The caller removes the file.
func (f *Fetcher) download(ctx context.Context, u *url.URL, rep *reporter) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("%w: build the request: %w", bundle.ErrFetch, err)
	}
	req.Header.Set("Accept", "application/x-tar, application/octet-stream;q=0.9, */*;q=0.1")
	rep.report(bundle.StepDownloading, 0)
	resp, err := f.client.Do(req)
	if err != nil {
		return "", classifyNetError(ctx, "GET", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
		detail := ""
		if s := printable(snippet); s != "" {
			detail = ": " + s
		}
		return "", fmt.Errorf("%w: the server answered %s%s", bundle.ErrFetch, resp.Status, detail)
	}
	max := f.limits.MaxDownloadBytes
	if resp.ContentLength > max {
		return "", fmt.Errorf("%w: the tarball is %d bytes, more than the %d allowed (limit MaxDownloadBytes)", bundle.ErrHostile, resp.ContentLength, max)
	}
	out, err := os.CreateTemp(f.cfg.TempDir, tmpPrefixDownload+"*.tar")
	if err != nil {
		return "", fmt.Errorf("create the download file: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			_ = out.Close()
			_ = os.Remove(out.Name())
		}
	}()
	var got int64
	body := &boundedReader{
		ctx: ctx, r: resp.Body, limit: max,
		what: "the tarball (limit MaxDownloadBytes)",
		onRead: func(n int64) {
			got += n
			if resp.ContentLength > 0 {
				rep.report(bundle.StepDownloading, int(got*100/resp.ContentLength))
			} else {
				rep.report(bundle.StepDownloading, -1)
			}
		},
	}
	if _, err := io.Copy(out, body); err != nil {
		switch {
		case errors.Is(err, bundle.ErrHostile):
			return "", err
		case errors.Is(err, ErrStalled):
			return "", err // the caller's prefix names the source
		case body.readErr != nil || ctx.Err() != nil:
			return "", classifyNetError(ctx, fmt.Sprintf("GET: after %d bytes", got), err)
		default:
			return "", fmt.Errorf("write %s: %w", out.Name(), err)
		}
	}
	if err := out.Close(); err != nil {
		return "", fmt.Errorf("close %s: %w", out.Name(), err)
	}
	rep.report(bundle.StepDownloading, 100)
	keep = true
	return out.Name(), nil
}

// classifyNetError turns a transport failure into an ErrFetch error that
// says what kind of failure it was; a cancelled caller gets its context
// error back.
func classifyNetError(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return fmt.Errorf("%w: %s: timed out: %w", bundle.ErrFetch, what, ctxErr)
		}
		return fmt.Errorf("%s: %w", what, ctxErr)
	}
	// what names the request already; net/http's *url.Error would repeat
	// it ("GET u: Get \"u\": …").
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verifyErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknownCA):
		return fmt.Errorf("%w: %s: TLS: the server certificate is signed by an authority this service does not trust (add its CA to the trusted roots): %w", bundle.ErrFetch, what, err)
	case errors.As(err, &hostErr):
		return fmt.Errorf("%w: %s: TLS: the server certificate does not match the host name: %w", bundle.ErrFetch, what, err)
	case errors.As(err, &invalid), errors.As(err, &verifyErr):
		return fmt.Errorf("%w: %s: TLS: invalid server certificate: %w", bundle.ErrFetch, what, err)
	}
	return fmt.Errorf("%w: %s: %w", bundle.ErrFetch, what, err)
}

// printable keeps an error body snippet safe to put in a status message.
func printable(b []byte) string {
	s := strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, string(b))
	return strings.TrimSpace(s)
}
