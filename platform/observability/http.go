package observability

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vcfsm/vcfsm/platform/echo"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"
)

// UnmatchedRoute labels requests no route matched, keeping the route label
// bounded whatever paths clients send.
const UnmatchedRoute = "unmatched"

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func (t *Telemetry) httpMetrics() *httpMetrics {
	t.httpOnce.Do(func() {
		t.http = &httpMetrics{
			requests: t.NewCounterVec("http_requests_total", "REST requests answered, by method, route pattern and status code.", "method", "route", "code"),
			duration: t.NewHistogramVec("http_request_duration_seconds", "REST request latency by method and route pattern.", grpcBuckets, "method", "route"),
		}
	})
	return t.http
}

// OtherMethod labels requests whose method is none of the standard ones,
// keeping the method label bounded whatever methods clients send (a
// request line may hold a 60 KB method).
const OtherMethod = "OTHER"

// methodLabel is the method's label: itself when standard, else OTHER.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return OtherMethod
}

// maxLoggedMethod bounds the method an access-log line repeats.
const maxLoggedMethod = 32

// SetRoute names the route pattern (e.g. /v2/vcf-services/{id}) a request
// matched; the metrics and the access log use it instead of the path.
func SetRoute(ctx context.Context, pattern string) {
	if c := requestFrom(ctx); c != nil && pattern != "" {
		c.route = pattern
	}
}

// SetPrincipal records who the request authenticated as.
func SetPrincipal(ctx context.Context, principal string) {
	if c := requestFrom(ctx); c != nil {
		c.principal = principal
	}
}

// HTTPHandler wraps a REST handler: it accepts or makes the X-Request-Id
// and returns it, traces the request (continuing a caller's traceparent),
// counts it by method, route pattern and code, and writes one access-log
// line (method, route, code, duration, principal, request id; never a
// header value, a token or a body). Every label comes from a bounded set:
// methods outside the standard ones count as OTHER, paths by the route
// pattern they matched or as unmatched; the logged method is cut at 32
// bytes.
func (t *Telemetry) HTTPHandler(next http.Handler, log *slog.Logger) http.Handler {
	m := t.httpMetrics()
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		c := &request{id: AcceptRequestID(r.Header.Get(RequestIDHeader)), route: UnmatchedRoute}
		w.Header().Set(RequestIDHeader, c.id)
		ctx := withRequest(r.Context(), c)
		rec := &recorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r.WithContext(ctx))
		d := time.Since(start)
		method := methodLabel(r.Method)
		if t.tracing {
			trace.SpanFromContext(ctx).SetName(method + " " + c.route)
		}
		m.requests.WithLabelValues(method, c.route, strconv.Itoa(rec.code)).Inc()
		m.duration.WithLabelValues(method, c.route).Observe(d.Seconds())
		if log.Enabled(ctx, slog.LevelInfo) {
			log.LogAttrs(ctx, slog.LevelInfo, "http request",
				slog.String("method", echo.Cut(r.Method, maxLoggedMethod)),
				slog.String("route", c.route),
				slog.Int("code", rec.code),
				slog.Duration("duration", d),
				slog.String("principal", c.principal),
				slog.String("request_id", c.id))
		}
	})
	if !t.tracing {
		return inner
	}
	return otelhttp.NewHandler(inner, "http",
		otelhttp.WithTracerProvider(t.Tracer), otelhttp.WithPropagators(t.Propagator))
}

// recorder remembers the status code. It keeps streaming working: Flush
// passes through (grpc-gateway's watch streams need it) and Unwrap lets
// http.ResponseController reach the connection.
type recorder struct {
	http.ResponseWriter
	code        int
	wroteHeader bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.code, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wroteHeader = true
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	r.wroteHeader = true
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// HTTPTransport traces outgoing HTTP calls (pre-check hooks).
func (t *Telemetry) HTTPTransport(base http.RoundTripper) http.RoundTripper {
	if !t.tracing {
		return base
	}
	return otelhttp.NewTransport(base, otelhttp.WithTracerProvider(t.Tracer), otelhttp.WithPropagators(t.Propagator))
}
