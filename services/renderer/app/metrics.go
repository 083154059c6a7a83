package app

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
	"github.com/vcfsm/vcfsm/services/renderer/internal/sandbox"
)

// measured counts and times every render by kind and outcome, and the
// renders killed for their time or memory bound.
type measured struct {
	next     render.Renderer
	renders  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	killed   *prometheus.CounterVec
}

var _ render.Renderer = (*measured)(nil)

func measure(tel *observability.Telemetry, next render.Renderer) *measured {
	m := &measured{
		next: next,
		renders: tel.NewCounterVec("renderer_renders_total",
			"Renders by kind (effective_values, resources, access_grants, overlay) and outcome (ok, invalid, failed, time_limit, memory_limit, crashed, abandoned).",
			"kind", "outcome"),
		duration: tel.NewHistogramVec("renderer_render_duration_seconds", "Render latency by kind.",
			observability.SlowBuckets, "kind"),
		killed: tel.NewCounterVec("renderer_renders_killed_total",
			"Renders whose worker was killed for exceeding a bound, by reason (time, memory).", "reason"),
	}
	m.killed.WithLabelValues("time")
	m.killed.WithLabelValues("memory")
	return m
}

// outcome classifies a render's error.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, sandbox.ErrTimeLimit):
		return "time_limit"
	case errors.Is(err, sandbox.ErrMemoryLimit):
		return "memory_limit"
	case errors.Is(err, sandbox.ErrWorkerCrashed):
		return "crashed"
	case errors.Is(err, render.ErrInvalidInput):
		return "invalid"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "abandoned"
	}
	return "failed"
}

func (m *measured) done(kind string, start time.Time, err error) {
	o := outcome(err)
	m.renders.WithLabelValues(kind, o).Inc()
	m.duration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	switch o {
	case "time_limit":
		m.killed.WithLabelValues("time").Inc()
	case "memory_limit":
		m.killed.WithLabelValues("memory").Inc()
	}
}

func (m *measured) RenderEffectiveValues(ctx context.Context, req *rendererv1.RenderEffectiveValuesRequest) (*rendererv1.RenderEffectiveValuesResponse, error) {
	start := time.Now()
	resp, err := m.next.RenderEffectiveValues(ctx, req)
	m.done("effective_values", start, err)
	return resp, err
}

func (m *measured) RenderResources(ctx context.Context, req *rendererv1.RenderResourcesRequest) (*rendererv1.RenderResourcesResponse, error) {
	start := time.Now()
	resp, err := m.next.RenderResources(ctx, req)
	m.done("resources", start, err)
	return resp, err
}

func (m *measured) RenderAccessGrants(ctx context.Context, req *rendererv1.RenderAccessGrantsRequest) (*rendererv1.RenderAccessGrantsResponse, error) {
	start := time.Now()
	resp, err := m.next.RenderAccessGrants(ctx, req)
	m.done("access_grants", start, err)
	return resp, err
}

func (m *measured) ApplyOverlay(ctx context.Context, req *rendererv1.ApplyOverlayRequest) (*rendererv1.ApplyOverlayResponse, error) {
	start := time.Now()
	resp, err := m.next.ApplyOverlay(ctx, req)
	m.done("overlay", start, err)
	return resp, err
}

// poolGauges exposes the worker pool's size, busy workers and restarts.
func poolGauges(tel *observability.Telemetry, pool *sandbox.Pool) {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: observability.Namespace, Name: name, Help: help}, f)
	}
	tel.MustRegister(
		gauge("renderer_pool_workers", "Render worker processes alive.", func() float64 {
			live, _, _ := pool.Stats()
			return float64(live)
		}),
		gauge("renderer_pool_busy_workers", "Render workers busy (rendering, or being replaced).", func() float64 {
			_, busy, _ := pool.Stats()
			return float64(busy)
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: observability.Namespace, Name: "renderer_pool_restarts_total",
			Help: "Render workers replaced after being killed or crashing."}, func() float64 {
			_, _, restarts := pool.Stats()
			return float64(restarts)
		}),
	)
}
