// Package telemetry implements the lifecycle manager's Observer with
// Prometheus metrics and OpenTelemetry spans: one span per operation
// (continuing the trace of the request that queued it) and one per step.
package telemetry

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/manager"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// maxPending bounds the remembered trace parents of queued operations; an
// operation queued beyond it simply starts its own trace.
const maxPending = 10_000

// Observer is the lifecycle's metrics and tracing.
type Observer struct {
	tracer trace.Tracer

	started   *prometheus.CounterVec
	finished  *prometheus.CounterVec
	resumed   *prometheus.CounterVec
	steps     *prometheus.HistogramVec
	reconcile *prometheus.HistogramVec
	reconErrs *prometheus.CounterVec
	rollouts  *rolloutMetrics

	mu      sync.Mutex
	pending map[string]trace.SpanContext
}

var _ manager.Observer = (*Observer)(nil)

// New registers the lifecycle metrics on tel.
func New(tel *observability.Telemetry) *Observer {
	o := &Observer{
		tracer: tel.Tracer.Tracer("github.com/vcfsm/vcfsm/services/lifecycle"),
		started: tel.NewCounterVec("lifecycle_operations_started_total",
			"Operation runs started by a worker, by operation type (a resumed operation counts again).", "type"),
		finished: tel.NewCounterVec("lifecycle_operations_finished_total",
			"Operation runs ended, by type and outcome (Succeeded, Failed, Stuck, interrupted).", "type", "outcome"),
		resumed: tel.NewCounterVec("lifecycle_operations_resumed_total",
			"Unfinished operations found at start and resumed, by type.", "type"),
		steps: tel.NewHistogramVec("lifecycle_step_duration_seconds",
			"Operation step durations, retries included, by operation type, step and result (succeeded, failed).",
			observability.SlowBuckets, "type", "step", "result"),
		reconcile: tel.NewHistogramVec("lifecycle_reconcile_duration_seconds",
			"Controller reads of a resource on its target, by resource kind and target system.",
			observability.FastBuckets, "kind", "system"),
		reconErrs: tel.NewCounterVec("lifecycle_reconcile_errors_total",
			"Controller reads of a resource that failed (target unreachable or erroring), by resource kind and target system.",
			"kind", "system"),
		pending: map[string]trace.SpanContext{},
	}
	o.rollouts = newRolloutMetrics(tel, o.tracer)
	return o
}

// OperationQueued remembers the queuing request's trace.
func (o *Observer) OperationQueued(ctx context.Context, key string) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) < maxPending {
		o.pending[key] = sc
	}
}

// OperationResumed counts a resumed operation.
func (o *Observer) OperationResumed(opType string) { o.resumed.WithLabelValues(opType).Inc() }

// OperationStarted counts the run and opens its span, a child of the
// request that queued it when that request was traced.
func (o *Observer) OperationStarted(ctx context.Context, key, opType string) (context.Context, func(string)) {
	o.started.WithLabelValues(opType).Inc()
	o.mu.Lock()
	parent, ok := o.pending[key]
	delete(o.pending, key)
	o.mu.Unlock()
	if ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	ctx, span := o.tracer.Start(ctx, "operation "+opType, trace.WithAttributes(attribute.String("vcfsm.operation.type", opType)))
	return ctx, func(outcome string) {
		o.finished.WithLabelValues(opType, outcome).Inc()
		if opType == lifecycle.OpRollout {
			o.rollouts.rolloutEnded(key, outcome)
		}
		span.SetAttributes(attribute.String("vcfsm.operation.outcome", outcome))
		if outcome == lifecycle.OutcomeFailed || outcome == lifecycle.OutcomeStuck {
			span.SetStatus(codes.Error, outcome)
		}
		span.End()
	}
}

// StepStarted times the step and opens its span.
func (o *Observer) StepStarted(ctx context.Context, opType, step string) (context.Context, func(error)) {
	start := time.Now()
	ctx, span := o.tracer.Start(ctx, "step "+step, trace.WithAttributes(
		attribute.String("vcfsm.operation.type", opType), attribute.String("vcfsm.step", step)))
	return ctx, func(err error) {
		result := "succeeded"
		if err != nil {
			result = "failed"
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		o.steps.WithLabelValues(opType, step, result).Observe(time.Since(start).Seconds())
		span.End()
	}
}

// Reconciled times a controller's read of a resource.
func (o *Observer) Reconciled(kind, system string, d time.Duration, err error) {
	o.reconcile.WithLabelValues(kind, system).Observe(d.Seconds())
	if err != nil && !errors.Is(err, target.ErrNotFound) {
		o.reconErrs.WithLabelValues(kind, system).Inc()
	}
}

// Gauges registers the gauges read at scrape time: the operation queue
// depth and the services by status and lifecycle state.
func Gauges(tel *observability.Telemetry, queueDepth func() int, services func() []*lifecycle.Service) {
	tel.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: observability.Namespace, Name: "lifecycle_operation_queue_depth",
			Help: "Operations queued and waiting for a worker.",
		}, func() float64 { return float64(queueDepth()) }),
		&servicesCollector{services: services, desc: prometheus.NewDesc(
			observability.Namespace+"_lifecycle_services",
			"VCF Services by status and lifecycle state.",
			[]string{"status", "lifecycle_state"}, nil)},
	)
}

// FencedWrites registers the count of this replica's store writes refused
// because it had lost the ownership they depended on (etcd only): a
// replica cut off from etcd and reconnected shows here that it changed
// nothing after another replica took its work over.
func FencedWrites(tel *observability.Telemetry, fenced func() int64) {
	tel.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Namespace: observability.Namespace, Name: "lifecycle_fenced_writes_total",
		Help: "Store writes refused because this replica no longer owned the operation or the controllers (etcd).",
	}, func() float64 { return float64(fenced()) }))
}

type servicesCollector struct {
	services func() []*lifecycle.Service
	desc     *prometheus.Desc
}

func (c *servicesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *servicesCollector) Collect(ch chan<- prometheus.Metric) {
	type key struct{ status, state string }
	counts := map[key]int{}
	for _, s := range c.services() {
		counts[key{s.Status, s.LifecycleState}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k.status, k.state)
	}
}
