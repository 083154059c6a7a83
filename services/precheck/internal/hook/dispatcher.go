// Package hook calls a VCF Service's upgrade pre-check hook exactly as
// seed 000's "Advanced: Runtime Pre-check Hook" describes: routing
// annotations from the source version's Package, the body from the target
// version's _data, HTTP(S) to <_service>.<namespace>.svc.cluster.local,
// and every failure mode of the troubleshooting table reported as a
// blocking failure with the documented wording.
package hook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
)

// Defaults of Options.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 20
	// DefaultConcurrency lets a fan-out of a few hundred slow hooks finish
	// in about one hook's latency.
	DefaultConcurrency = 256
	// MaxRequests bounds one DispatchAll call.
	MaxRequests = 10000
	// ErrorBodyLimit bounds the part of a non-200 body surfaced in the
	// failure; the rest is cut with a note.
	ErrorBodyLimit = 4 << 10
	// logBodyLimit bounds the bodies written to the log (debug level only:
	// hook answers are written by the services, not by us).
	logBodyLimit = 2 << 10
	// CACertKey is the Secret key holding the hook's CA (not "ca.cert").
	CACertKey = "ca.crt"
	// KindHook is the CheckResult kind of hook results.
	KindHook = "HOOK"
)

// ErrInvalidRequest marks a request the dispatcher refuses as a whole.
var ErrInvalidRequest = errors.New("invalid hook request")

// Options configure a Dispatcher; zero values take the defaults.
type Options struct {
	// Token is sent as "Authorization: Bearer <Token>" on every call.
	Token string
	// Timeout bounds one call: connect, TLS, request and the whole body.
	Timeout time.Duration
	// MaxResponseBytes bounds the body read from a hook.
	MaxResponseBytes int64
	// Concurrency bounds the calls DispatchAll runs at once.
	Concurrency int
	// Resolver maps host names to addresses; nil means the system resolver.
	Resolver *Resolver
	Logger   *slog.Logger
	// Observer, when set, is told each hook call's outcome (passed,
	// blocked, failed) and duration (metrics).
	Observer func(outcome string, d time.Duration)
	// Transport, when set, wraps each call's transport (tracing).
	Transport func(http.RoundTripper) http.RoundTripper
}

// Dispatcher calls pre-check hooks. It is safe for concurrent use.
type Dispatcher struct {
	token       string
	timeout     time.Duration
	maxBytes    int64
	concurrency int
	resolver    *Resolver
	dialer      net.Dialer
	log         *slog.Logger
	observe     func(outcome string, d time.Duration)
	transport   func(http.RoundTripper) http.RoundTripper
}

// NewDispatcher builds a Dispatcher.
func NewDispatcher(opts Options) (*Dispatcher, error) {
	if opts.Token == "" {
		return nil, errors.New("hook dispatcher: a bearer token is required")
	}
	d := &Dispatcher{
		token:       opts.Token,
		timeout:     opts.Timeout,
		maxBytes:    opts.MaxResponseBytes,
		concurrency: opts.Concurrency,
		resolver:    opts.Resolver,
		log:         opts.Logger,
		observe:     opts.Observer,
		transport:   opts.Transport,
	}
	if d.timeout <= 0 {
		d.timeout = DefaultTimeout
	}
	if d.maxBytes <= 0 {
		d.maxBytes = DefaultMaxResponseBytes
	}
	if d.concurrency <= 0 {
		d.concurrency = DefaultConcurrency
	}
	if d.resolver == nil {
		r, err := NewResolver(nil, nil)
		if err != nil {
			return nil, err
		}
		d.resolver = r
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	return d, nil
}

// DispatchAll calls every hook, at most Concurrency at once, and answers
// in request order. One slow hook delays nothing but its own slot.
func (d *Dispatcher) DispatchAll(ctx context.Context, reqs []*precheckv1.DispatchHookRequest) ([]*precheckv1.HookResult, error) {
	if len(reqs) > MaxRequests {
		return nil, fmt.Errorf("%w: %d requests in one call; at most %d", ErrInvalidRequest, len(reqs), MaxRequests)
	}
	out := make([]*precheckv1.HookResult, len(reqs))
	var g errgroup.Group
	g.SetLimit(d.concurrency)
	for i, req := range reqs {
		g.Go(func() error {
			out[i] = d.Dispatch(ctx, req)
			return nil
		})
	}
	_ = g.Wait() // the calls report failures in their results, never as errors
	return out, nil
}

// Dispatch calls one service's hook. Every failure, including a request
// that cannot be made at all, comes back as a blocked result with the
// reason in Failure; the caller merges it into the pre-check report.
func (d *Dispatcher) Dispatch(ctx context.Context, req *precheckv1.DispatchHookRequest) *precheckv1.HookResult {
	res := &precheckv1.HookResult{Supervisor: req.GetSupervisor()}
	c, configured, err := d.prepare(req)
	res.Configured = configured
	if err != nil {
		return fail(res, err.Error())
	}
	if !configured {
		return res
	}
	res.Endpoint = c.url
	start := time.Now()
	status, items, err := d.call(ctx, c)
	res.HttpStatus = int32(status)
	if err != nil {
		d.observed("failed", start)
		return fail(res, err.Error())
	}
	defer func() {
		if res.Blocked {
			d.observed("blocked", start)
		} else {
			d.observed("passed", start)
		}
	}()
	subject := req.GetSupervisor()
	if subject == "" {
		subject = req.GetServiceName()
	}
	for _, it := range items {
		res.Results = append(res.Results, &commonv1.CheckResult{
			Severity:       it.severity,
			Kind:           KindHook,
			CheckedVersion: req.GetTargetVersion(),
			Subject:        subject,
			Message:        it.message,
			Source:         c.url,
		})
		if it.severity == SeverityError {
			res.Blocked = true
		}
	}
	return res
}

func (d *Dispatcher) observed(outcome string, start time.Time) {
	if d.observe != nil {
		d.observe(outcome, time.Since(start))
	}
}

func fail(res *precheckv1.HookResult, msg string) *precheckv1.HookResult {
	res.Failure = msg
	res.Blocked = true
	return res
}

// prepared is a call ready to be made.
type prepared struct {
	route
	namespace string
	url       string
	host      string // host:port as the URL names it
	body      []byte
	tls       *tls.Config // nil for http
	secretRef string      // "secret X in namespace Y", for TLS messages
}

// preflight is the seed's last troubleshooting row: these fail before any
// outbound call is made.
const preflight = "pre-check failed before calling the hook: "

// invalidResponseBody starts the failure of a 200 answer whose body is not a
// valid result document. The wording, capital included, is the seed's
// troubleshooting row (see the README's table), so it is kept as is.
const invalidResponseBody = "Invalid response body"

// prepare reads and checks everything the call needs, with no network.
func (d *Dispatcher) prepare(req *precheckv1.DispatchHookRequest) (*prepared, bool, error) {
	src, err := packageAnnotations(req.GetSourcePackageYaml())
	if err != nil {
		return nil, false, fmt.Errorf("%sthe source version's Package %scould not be loaded: %w", preflight, versionNote(req.GetSourceVersion()), err)
	}
	tgt, err := packageAnnotations(req.GetTargetPackageYaml())
	if err != nil {
		return nil, false, fmt.Errorf("%sthe target version's Package %scould not be loaded: %w", preflight, versionNote(req.GetTargetVersion()), err)
	}
	if !hasHook(src) {
		return nil, false, nil
	}
	ns := strings.TrimSpace(req.GetNamespace())
	if ns == "" {
		return nil, true, fmt.Errorf("%sthe service's namespace could not be resolved: the request names none (is the service installed?)", preflight)
	}
	if !validLabel(ns) {
		return nil, true, fmt.Errorf("%sthe service's namespace %q is not a valid Kubernetes namespace name", preflight, ns)
	}
	r, err := parseRoute(src)
	if err != nil {
		return nil, true, err
	}
	c := &prepared{
		route:     r,
		namespace: ns,
		url:       r.url(ns),
		host:      net.JoinHostPort(r.host(ns), strconv.Itoa(r.port)),
		body:      []byte(tgt[AnnotationData]),
	}
	if r.scheme == "https" {
		c.secretRef = fmt.Sprintf("secret %s in namespace %s", r.caSecret, ns)
		pool, err := caPool(req.GetSecrets(), r.caSecret, c.secretRef)
		if err != nil {
			return nil, true, err
		}
		c.tls = &tls.Config{
			RootCAs:    pool,
			ServerName: r.host(ns),
			MinVersion: tls.VersionTLS12,
		}
	}
	return c, true, nil
}

func versionNote(v string) string {
	if v == "" {
		return ""
	}
	return "(" + v + ") "
}

// caPool builds the only root of trust: the ca.crt of the named Secret.
func caPool(secrets map[string]*precheckv1.SecretData, name, ref string) (*x509.CertPool, error) {
	s, ok := secrets[name]
	if !ok || s == nil {
		return nil, fmt.Errorf("TLS error: %s not found: create it with a PEM-encoded %s key holding the CA that issued the hook's certificate", ref, CACertKey)
	}
	pem, ok := s.GetData()[CACertKey]
	if !ok {
		keys := make([]string, 0, len(s.GetData()))
		for k := range s.GetData() {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return nil, fmt.Errorf("TLS error: %s has no %s key (the key must be %s, not ca.cert; keys present: %s)", ref, CACertKey, CACertKey, orNone(keys))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("TLS error: the %s key of %s holds no PEM-encoded certificate", CACertKey, ref)
	}
	return pool, nil
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// unreachableError is a failure to reach the endpoint at all.
type unreachableError struct {
	endpoint string   // host:port as the hook is named
	resolved []string // addresses tried
	err      error
}

func (e *unreachableError) Error() string {
	if len(e.resolved) == 0 {
		return fmt.Sprintf("endpoint unreachable: %s: %v", e.endpoint, e.err)
	}
	return fmt.Sprintf("endpoint unreachable: %s resolved to %s: %v", e.endpoint, strings.Join(e.resolved, ", "), e.err)
}

func (e *unreachableError) Unwrap() error { return e.err }

// dialContext resolves through the Resolver, so the URL (and with it SNI
// and certificate verification) keeps the in-cluster name.
func (d *Dispatcher) dialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, &unreachableError{endpoint: addr, err: err}
	}
	targets, err := d.resolver.Resolve(ctx, host, port)
	if err != nil {
		return nil, &unreachableError{endpoint: addr, err: err}
	}
	var errs []error
	for _, t := range targets {
		conn, err := d.dialer.DialContext(ctx, network, t)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, &unreachableError{endpoint: addr, resolved: targets, err: errors.Join(errs...)}
}

// client is a one-call HTTP client: no proxies (the hook is in-cluster),
// no keep-alive, no redirects.
func (d *Dispatcher) client(tlsConf *tls.Config) (*http.Client, *http.Transport) {
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.dialContext,
		TLSClientConfig:        tlsConf,
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	var rt http.RoundTripper = tr
	if d.transport != nil {
		rt = d.transport(tr)
	}
	return &http.Client{
		Transport: rt,
		// A redirect is answered as the non-200 it is; following it could
		// send the token to another host.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, tr
}

// call makes the request and reads the answer. It returns the HTTP status
// (0 when there was none) and the kept results.
func (d *Dispatcher) call(ctx context.Context, c *prepared) (int, []item, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()

	var body io.Reader = http.NoBody
	if len(c.body) > 0 {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, c.url, body)
	if err != nil {
		return 0, nil, fmt.Errorf("%scannot build the request for %s: %w", preflight, c.url, err)
	}
	req.Header.Set("Authorization", "Bearer "+d.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")

	d.log.InfoContext(ctx, "pre-check hook request", "method", c.method, "url", c.url)
	d.log.DebugContext(ctx, "pre-check hook request detail",
		"url", c.url, "headers", logHeaders(req.Header), "body", bounded(c.body, logBodyLimit))

	client, tr := d.client(c.tls)
	defer tr.CloseIdleConnections()
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		err = d.describe(ctx, c, err)
		d.log.InfoContext(ctx, "pre-check hook failed", "url", c.url, "duration", time.Since(start), "error", err)
		return 0, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	data, readErr := io.ReadAll(io.LimitReader(resp.Body, d.maxBytes+1))
	tooLarge := int64(len(data)) > d.maxBytes
	if tooLarge {
		data = data[:d.maxBytes]
	}
	d.log.InfoContext(ctx, "pre-check hook response",
		"url", c.url, "status", resp.StatusCode, "duration", time.Since(start))
	d.log.DebugContext(ctx, "pre-check hook response detail",
		"url", c.url, "headers", logHeaders(resp.Header), "body", bounded(data, logBodyLimit))
	if readErr != nil {
		return resp.StatusCode, nil, fmt.Errorf("reading the response of %s: %w", c.url, d.describe(ctx, c, readErr))
	}
	if resp.StatusCode != http.StatusOK {
		msg := fmt.Sprintf("hook %s answered HTTP %d %s", c.url, resp.StatusCode, http.StatusText(resp.StatusCode))
		if loc := resp.Header.Get("Location"); loc != "" {
			msg += fmt.Sprintf(" (redirect to %s not followed)", loc)
		}
		return resp.StatusCode, nil, fmt.Errorf("%s: %s", msg, bounded(data, ErrorBodyLimit))
	}
	if tooLarge {
		return resp.StatusCode, nil, fmt.Errorf("%s: larger than %d bytes", invalidResponseBody, d.maxBytes)
	}
	items, err := parseResults(data)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("%s: %w", invalidResponseBody, err)
	}
	return resp.StatusCode, items, nil
}

// describe turns a transport error into the troubleshooting table's
// wording.
func (d *Dispatcher) describe(ctx context.Context, c *prepared, err error) error {
	var unreachable *unreachableError
	var verify *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	switch {
	case errors.As(err, &unreachable):
		return unreachable
	case errors.As(err, &unknownCA):
		return fmt.Errorf("TLS error: the certificate presented by %s was not issued by the CA in the %s key of %s: %w", c.host, CACertKey, c.secretRef, unknownCA)
	case errors.As(err, &hostname):
		return fmt.Errorf("TLS error: the certificate presented by %s does not list %s among its SANs: %w", c.host, c.route.host(c.namespace), hostname)
	case errors.As(err, &invalid):
		return fmt.Errorf("TLS error: the certificate presented by %s is invalid: %w", c.host, invalid)
	case errors.As(err, &verify):
		return fmt.Errorf("TLS error: the certificate presented by %s failed verification against %s: %w", c.host, c.secretRef, verify.Err)
	case errors.As(err, &record),
		// net/http replaces the RecordHeaderError of a plain-http answer
		// with an unexported error carrying this text.
		c.tls != nil && strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return fmt.Errorf("TLS error: %s did not answer with TLS (is the hook serving plain http?): %w", c.host, err)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return fmt.Errorf("endpoint timed out: %s did not answer within %s", c.url, d.timeout)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("hook call to %s cancelled: %w", c.url, err)
	case c.tls != nil && strings.Contains(err.Error(), "tls:"):
		return fmt.Errorf("TLS error: handshake with %s failed: %w", c.host, err)
	default:
		return fmt.Errorf("calling %s: %w", c.url, err)
	}
}

// logHeaders renders headers for the log with the token withheld.
func logHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if strings.EqualFold(k, "Authorization") {
			out[k] = "Bearer [redacted]"
			continue
		}
		out[k] = strings.Join(v, ", ")
	}
	return out
}

// bounded is b as text, cut at limit bytes with a note.
func bounded(b []byte, limit int) string {
	if len(b) <= limit {
		return string(b)
	}
	return string(b[:limit]) + fmt.Sprintf(" … [truncated at %d bytes]", limit)
}
