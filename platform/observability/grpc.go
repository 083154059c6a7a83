package observability

import (
	"context"
	"log/slog"
	"strings"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/platform/auth"
)

// gRPC latency buckets: from a cached read (sub-millisecond) to a render or
// a slow hook fan-out (tens of seconds).
var grpcBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

func (t *Telemetry) grpcMetrics() (*grpcprom.ServerMetrics, *grpcprom.ClientMetrics) {
	t.grpcOnce.Do(func() {
		t.serverMetrics = grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramBuckets(grpcBuckets)))
		t.clientMetrics = grpcprom.NewClientMetrics(grpcprom.WithClientHandlingTimeHistogram(grpcprom.WithHistogramBuckets(grpcBuckets)))
		t.Registry.MustRegister(t.serverMetrics, t.clientMetrics)
	})
	return t.serverMetrics, t.clientMetrics
}

// ServerChain is the telemetry's part of a server's interceptor chain.
// Outer goes before authentication (so rejected calls are counted and
// logged too), Inner right after it (it reads the authenticated principal).
type ServerChain struct {
	OuterUnary  []grpc.UnaryServerInterceptor
	OuterStream []grpc.StreamServerInterceptor
	InnerUnary  []grpc.UnaryServerInterceptor
	InnerStream []grpc.StreamServerInterceptor
}

// ServerOptions are the options a gRPC server needs for tracing.
func (t *Telemetry) ServerOptions() []grpc.ServerOption {
	if !t.tracing {
		return nil
	}
	return []grpc.ServerOption{grpc.StatsHandler(otelgrpc.NewServerHandler(
		otelgrpc.WithTracerProvider(t.Tracer), otelgrpc.WithPropagators(t.Propagator)))}
}

// ServerInterceptors returns the metrics and access-log interceptors; log
// receives one line per call.
func (t *Telemetry) ServerInterceptors(log *slog.Logger) ServerChain {
	sm, _ := t.grpcMetrics()
	return ServerChain{
		OuterUnary:  []grpc.UnaryServerInterceptor{sm.UnaryServerInterceptor(), accessUnary(log)},
		OuterStream: []grpc.StreamServerInterceptor{sm.StreamServerInterceptor(), accessStream(log)},
		InnerUnary:  []grpc.UnaryServerInterceptor{principalUnary},
		InnerStream: []grpc.StreamServerInterceptor{principalStream},
	}
}

// InitializeServerMetrics creates the series of every registered method at
// zero, so rates exist before the first call.
func (t *Telemetry) InitializeServerMetrics(s *grpc.Server) {
	sm, _ := t.grpcMetrics()
	sm.InitializeMetrics(s)
}

// DialOptions trace, count and carry the request id on a client
// connection's calls.
func (t *Telemetry) DialOptions() []grpc.DialOption {
	_, cm := t.grpcMetrics()
	opts := []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(propagateUnary, cm.UnaryClientInterceptor()),
		grpc.WithChainStreamInterceptor(propagateStream, cm.StreamClientInterceptor()),
	}
	if t.tracing {
		opts = append(opts, grpc.WithStatsHandler(otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(t.Tracer), otelgrpc.WithPropagators(t.Propagator))))
	}
	return opts
}

func startCall(ctx context.Context) (context.Context, *request) {
	// ValueFromIncomingContext reads one key without copying the metadata.
	id := ""
	if v := metadata.ValueFromIncomingContext(ctx, RequestIDMetadata); len(v) > 0 {
		id = v[0]
	}
	c := &request{id: AcceptRequestID(id)}
	return withRequest(ctx, c), c
}

func accessUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		ctx, c := startCall(ctx)
		resp, err := handler(ctx, req)
		logCall(ctx, log, info.FullMethod, err, time.Since(start), c)
		return resp, err
	}
}

func accessStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		ctx, c := startCall(ss.Context())
		err := handler(srv, &ctxStream{ServerStream: ss, ctx: ctx})
		logCall(ctx, log, info.FullMethod, err, time.Since(start), c)
		return err
	}
}

// logCall writes the access-log line: never the request, the answer or
// the token. Health checks (probes every few seconds) log at debug level.
func logCall(ctx context.Context, log *slog.Logger, method string, err error, d time.Duration, c *request) {
	level := slog.LevelInfo
	if strings.HasPrefix(method, "/grpc.health.v1.Health/") {
		level = slog.LevelDebug
	}
	if !log.Enabled(ctx, level) {
		return
	}
	log.LogAttrs(ctx, level, "grpc call",
		slog.String("method", method),
		slog.String("code", status.Code(err).String()),
		slog.Duration("duration", d),
		slog.String("principal", c.principal),
		slog.String("request_id", c.id))
}

// principalUnary names the authenticated caller in the call's access-log
// line. The gateway authenticates at its edge and logs the principal
// itself, so nothing is sent back for it.
func principalUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if c := requestFrom(ctx); c != nil {
		c.principal = auth.Principal(ctx)
	}
	return handler(ctx, req)
}

func principalStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if c := requestFrom(ss.Context()); c != nil {
		c.principal = auth.Principal(ss.Context())
	}
	return handler(srv, ss)
}

type ctxStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *ctxStream) Context() context.Context { return s.ctx }

// outgoing adds the context's request id to a call's metadata (the
// gateway's calls to lifecycle, lifecycle's to its peers).
func outgoing(ctx context.Context) context.Context {
	if id := RequestID(ctx); id != "" {
		return metadata.AppendToOutgoingContext(ctx, RequestIDMetadata, id)
	}
	return ctx
}

func propagateUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(outgoing(ctx), method, req, reply, cc, opts...)
}

func propagateStream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(outgoing(ctx), desc, cc, method, opts...)
}

// Buckets for the system's own latency histograms (seconds).
var (
	// FastBuckets: store transactions, target reads.
	FastBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5}
	// SlowBuckets: operation steps, renders, hook calls.
	SlowBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
)

// NewCounterVec registers a vcfsm_ counter on t.
func (t *Telemetry) NewCounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	t.Registry.MustRegister(c)
	return c
}

// NewHistogramVec registers a vcfsm_ histogram on t.
func (t *Telemetry) NewHistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
	t.Registry.MustRegister(h)
	return h
}
