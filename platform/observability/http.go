package observability

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/felixge/httpsnoop"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"
)

// PrincipalMetadata is the gRPC response header through which a service
// tells the gateway who the caller authenticated as, for the gateway's
// access log; the gateway never forwards it to REST clients.
const PrincipalMetadata = "x-vcfsm-principal"

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

// httpCall is what the access log learns while a request runs.
type httpCall struct {
	route     string
	principal string
}

type httpCallKey struct{}

// SetRoute names the route pattern (e.g. /v2/vcf-services/{id}) a request
// matched; the metrics and the access log use it instead of the path.
func SetRoute(ctx context.Context, pattern string) {
	if c, ok := ctx.Value(httpCallKey{}).(*httpCall); ok && pattern != "" {
		c.route = pattern
	}
}

// SetPrincipal records who the request authenticated as.
func SetPrincipal(ctx context.Context, principal string) {
	if c, ok := ctx.Value(httpCallKey{}).(*httpCall); ok {
		c.principal = principal
	}
}

// HTTPHandler wraps a REST handler: it accepts or makes the X-Request-Id
// and returns it, traces the request (continuing a caller's traceparent),
// counts it by route pattern and code, and writes one access-log line
// (method, route, code, duration, principal, request id; never a header
// value, a token or a body).
func (t *Telemetry) HTTPHandler(next http.Handler, log *slog.Logger) http.Handler {
	m := t.httpMetrics()
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := AcceptRequestID(r.Header.Get(RequestIDHeader))
		w.Header().Set(RequestIDHeader, id)
		c := &httpCall{route: UnmatchedRoute}
		ctx := context.WithValue(WithRequestID(r.Context(), id), httpCallKey{}, c)
		r = r.WithContext(ctx)
		got := httpsnoop.CaptureMetrics(next, w, r)
		trace.SpanFromContext(ctx).SetName(r.Method + " " + c.route)
		code := strconv.Itoa(got.Code)
		m.requests.WithLabelValues(r.Method, c.route, code).Inc()
		m.duration.WithLabelValues(r.Method, c.route).Observe(got.Duration.Seconds())
		log.LogAttrs(ctx, slog.LevelInfo, "http request",
			slog.String("method", r.Method),
			slog.String("route", c.route),
			slog.Int("code", got.Code),
			slog.Duration("duration", got.Duration),
			slog.String("principal", c.principal),
			slog.String("request_id", id))
	})
	if !t.tracing {
		return inner
	}
	return otelhttp.NewHandler(inner, "http",
		otelhttp.WithTracerProvider(t.Tracer), otelhttp.WithPropagators(t.Propagator))
}

// HTTPTransport traces outgoing HTTP calls (pre-check hooks).
func (t *Telemetry) HTTPTransport(base http.RoundTripper) http.RoundTripper {
	if !t.tracing {
		return base
	}
	return otelhttp.NewTransport(base, otelhttp.WithTracerProvider(t.Tracer), otelhttp.WithPropagators(t.Propagator))
}
