// Package observability gives every process the same metrics, traces and
// access logs: a Prometheus registry served on a metrics listener, an
// OpenTelemetry tracer exported with OTLP when the standard environment
// asks for it, and the gRPC and HTTP middleware that feed both and write
// one access-log line per call.
//
// A Telemetry is built once per process (the all-in-one shares one between
// its services) and handed down; nothing here is global, so tests can run
// several systems in one process, each with its own registry and tracer.
package observability

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Namespace prefixes every metric of the system.
const Namespace = "vcfsm"

// Telemetry is a process's metrics registry and tracer.
type Telemetry struct {
	// Registry holds every metric the process serves on /metrics.
	Registry *prometheus.Registry
	// Tracer makes spans; a no-op tracer when tracing is off.
	Tracer trace.TracerProvider
	// Propagator carries trace context across gRPC and HTTP calls.
	Propagator propagation.TextMapPropagator

	shutdown func(context.Context) error
	// tracing is false with the no-op tracer: the trace middleware is
	// then left out of every chain, costing nothing.
	tracing bool

	grpcOnce      sync.Once
	serverMetrics *grpcprom.ServerMetrics
	clientMetrics *grpcprom.ClientMetrics
	httpOnce      sync.Once
	http          *httpMetrics
	storeOnce     sync.Once
	store         *storeMetrics
}

// TracingEnabled reports whether the standard OpenTelemetry environment asks
// for trace export: OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT set, and OTEL_SDK_DISABLED not true.
func TracingEnabled() bool {
	if os.Getenv("OTEL_SDK_DISABLED") == "true" {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New builds the telemetry of a process named service. Traces are exported
// over OTLP/gRPC when TracingEnabled; the exporter reads the standard
// OTEL_EXPORTER_OTLP_* variables (endpoint, headers, TLS, timeout) and the
// sampler OTEL_TRACES_SAMPLER. Otherwise spans are not even recorded.
func New(ctx context.Context, service string) (*Telemetry, error) {
	if !TracingEnabled() {
		return WithTracer(nil), nil
	}
	exp, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter (OTEL_EXPORTER_OTLP_ENDPOINT=%q): %w", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (read last) win
	// over the binary's name.
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", service)), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("trace resource (OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := WithTracer(tp)
	t.shutdown = tp.Shutdown
	return t, nil
}

// WithTracer builds telemetry around a given tracer provider (tests pass an
// in-memory one); nil means tracing off.
func WithTracer(tp trace.TracerProvider) *Telemetry {
	tracing := tp != nil
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return &Telemetry{
		Registry:   reg,
		Tracer:     tp,
		Propagator: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
		shutdown:   func(context.Context) error { return nil },
		tracing:    tracing,
	}
}

// Or returns t, or telemetry that records metrics nobody serves and no
// traces when t is nil, so components built without telemetry (unit tests)
// need no special case.
func Or(t *Telemetry) *Telemetry {
	if t == nil {
		return WithTracer(nil)
	}
	return t
}

// Shutdown flushes and stops the trace exporter.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if err := t.shutdown(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("flush traces: %w", err)
	}
	return nil
}

// MustRegister registers collectors, panicking on a programming error
// (a duplicate or inconsistent metric), exactly as prometheus does.
func (t *Telemetry) MustRegister(cs ...prometheus.Collector) { t.Registry.MustRegister(cs...) }
