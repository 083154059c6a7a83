package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc/codes"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/gateway/internal/console"
)

// guard is the REST edge's first handler: it refuses what it can before a
// request body is read: over-long queries, missing or invalid tokens, the
// service role, callers over their rate, bodies declared larger than the
// cap, watch streams over the per-principal cap. It then caps the body as
// it is read.
type guard struct {
	next   http.Handler
	tokens *auth.Tokens
	limits Limits
	log    *slog.Logger

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
	watches  map[string]int
}

func newGuard(next http.Handler, tokens *auth.Tokens, limits Limits, log *slog.Logger) *guard {
	return &guard{next: next, tokens: tokens, limits: limits.withDefaults(), log: log,
		limiters: map[string]*rate.Limiter{}, watches: map[string]int{}}
}

// public reports routes that need no token: they reveal no data
// (liveness and readiness are what orchestrators probe without one; the
// console's files are what a browser loads before its user signs in).
func public(r *http.Request) bool {
	p := strings.TrimPrefix(r.URL.Path, VCFAPrefix)
	return r.Method == http.MethodGet && (p == "/v2/openapi.json" || r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/ui") ||
		console.Public(r)
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if n := len(r.URL.RawQuery); n > g.limits.MaxQueryBytes {
		writeError(w, http.StatusRequestURITooLong, codes.InvalidArgument, fmt.Sprintf("query string of %d bytes exceeds the limit of %d bytes (--http-max-query-bytes)", n, g.limits.MaxQueryBytes))
		return
	}
	if public(r) {
		g.next.ServeHTTP(w, r)
		return
	}
	id, ok := g.authenticate(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="vcf-service-manager"`)
		writeError(w, http.StatusUnauthorized, codes.Unauthenticated, "missing or invalid bearer token: send Authorization: Bearer <token>")
		return
	}
	// The access log names the caller; lifecycle authenticates the
	// forwarded token again but says nothing back about it.
	observability.SetPrincipal(r.Context(), id.Principal)
	if err := auth.Require(id, auth.PermREST); err != nil {
		writeError(w, http.StatusForbidden, codes.PermissionDenied, err.Error())
		return
	}
	if wait, ok := g.allow(id.Principal); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		writeError(w, http.StatusTooManyRequests, codes.ResourceExhausted, fmt.Sprintf("principal %q exceeded %g requests per second (burst %d): retry after %s", id.Principal, g.limits.RatePerSecond, g.limits.RateBurst, wait.Round(time.Millisecond)))
		return
	}
	if r.ContentLength > g.limits.MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, codes.InvalidArgument, bodyTooLarge(g.limits.MaxBodyBytes))
		return
	}
	// The capped body is found again through r.Body by the error handler
	// (bodyLimitHit): the handlers after the guard pass the request, or a
	// shallow clone sharing its body, on; no context value, no request copy.
	if r.Body != http.NoBody { // a GET has none: nothing to cap
		r.Body = &cappedBody{ReadCloser: http.MaxBytesReader(w, r.Body, g.limits.MaxBodyBytes)}
	}
	if isWatch(r) {
		g.serveWatch(w, r, id.Principal)
		return
	}
	g.next.ServeHTTP(w, r)
}

func (g *guard) authenticate(r *http.Request) (auth.Identity, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return auth.Identity{}, false
	}
	return g.tokens.Lookup(strings.TrimSpace(token))
}

// allow takes one request from the principal's bucket, or tells how long
// to wait for one. Principals are the configured ones, so the map is
// bounded by the token configuration.
func (g *guard) allow(principal string) (time.Duration, bool) {
	g.mu.Lock()
	lim, ok := g.limiters[principal]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(g.limits.RatePerSecond), g.limits.RateBurst)
		g.limiters[principal] = lim
	}
	g.mu.Unlock()
	if lim.Allow() { // the common case, without a reservation to allocate
		return 0, true
	}
	res := lim.Reserve()
	if d := res.Delay(); d > 0 {
		res.Cancel()
		return d, false
	}
	return 0, true
}

func isWatch(r *http.Request) bool {
	p := strings.TrimPrefix(r.URL.Path, VCFAPrefix)
	return r.Method == http.MethodGet && strings.HasPrefix(p, "/v2/vcf-services/") && strings.HasSuffix(p, "/watch") ||
		console.IsWatch(r)
}

// serveWatch holds one of the principal's watch slots for the stream's
// life; the stream is exempt from the write timeout and ends when it has
// written nothing for WatchIdleTimeout.
func (g *guard) serveWatch(w http.ResponseWriter, r *http.Request, principal string) {
	g.mu.Lock()
	if g.watches[principal] >= g.limits.MaxWatches {
		g.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusTooManyRequests, codes.ResourceExhausted, fmt.Sprintf("principal %q already has %d open watch streams, the limit (--max-watches)", principal, g.limits.MaxWatches))
		return
	}
	g.watches[principal]++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.watches[principal]--
		g.mu.Unlock()
	}()
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{})
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	iw := &idleWriter{ResponseWriter: w, timer: time.AfterFunc(g.limits.WatchIdleTimeout, cancel), idle: g.limits.WatchIdleTimeout}
	defer iw.timer.Stop()
	g.next.ServeHTTP(iw, r.WithContext(ctx))
}

// idleWriter restarts the idle timer on every write. It also gives an
// error the watch route answers before streaming (400, 404, …) the
// envelope of every other route: grpc-gateway writes it as a stream chunk,
// {"error": {…}}, where the other routes answer the status itself.
type idleWriter struct {
	http.ResponseWriter
	timer *time.Timer
	idle  time.Duration
	// failed: the answer is an error, not a stream.
	failed bool
}

func (w *idleWriter) WriteHeader(code int) {
	w.failed = code >= http.StatusBadRequest
	w.ResponseWriter.WriteHeader(code)
}

func (w *idleWriter) Write(p []byte) (int, error) {
	w.timer.Reset(w.idle)
	if w.failed {
		var chunk struct {
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(p, &chunk) == nil && len(chunk.Error) > 0 {
			if _, err := w.ResponseWriter.Write(chunk.Error); err != nil {
				return 0, err
			}
			return len(p), nil
		}
	}
	return w.ResponseWriter.Write(p)
}

// Flush keeps streaming working through the wrapper.
func (w *idleWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *idleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// cappedBody records that the body hit the cap while the gateway decoded
// it, so the error handler answers 413 instead of a decoding error.
type cappedBody struct {
	io.ReadCloser

	mu       sync.Mutex
	exceeded bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		b.mu.Lock()
		b.exceeded = true
		b.mu.Unlock()
	}
	return n, err
}

func (b *cappedBody) hit() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.exceeded
}

// bodyLimitHit reports whether the request's body went over the cap.
func bodyLimitHit(r *http.Request) bool {
	b, ok := r.Body.(*cappedBody)
	return ok && b.hit()
}

func bodyTooLarge(limit int64) string {
	return fmt.Sprintf("request body exceeds the limit of %d bytes (--http-max-body-bytes)", limit)
}

// writeError answers in the gateway's error shape (google.rpc.Status).
func writeError(w http.ResponseWriter, httpStatus int, code codes.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	// A refused request's body is never read; closing the connection
	// stops the client from sending the rest.
	w.Header().Set("Connection", "close")
	w.WriteHeader(httpStatus)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": int(code), "message": msg, "details": []any{}})
}
