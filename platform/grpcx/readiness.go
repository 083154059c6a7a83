package grpcx

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// ReadinessCheck reports why a service cannot do its work now (its store
// is unreachable, a peer it needs is down), or nil when it can.
type ReadinessCheck func(ctx context.Context) error

// readiness keeps the health status of services with a check in step with
// reality: NOT_SERVING while the check fails, SERVING once it passes. The
// server as a whole ("") is SERVING only while every service is.
type readiness struct {
	health   *health.Server
	log      *slog.Logger
	interval time.Duration

	mu       sync.Mutex
	checks   map[string]ReadinessCheck
	services []string
	failing  map[string]bool
	started  bool

	// checked is closed once the first checks are published.
	checked     chan struct{}
	checkedOnce sync.Once
}

func newReadiness(h *health.Server, log *slog.Logger, interval time.Duration) *readiness {
	if interval <= 0 {
		interval = 2 * time.Second
	}
	return &readiness{health: h, log: log, interval: interval, checks: map[string]ReadinessCheck{}, failing: map[string]bool{},
		checked: make(chan struct{})}
}

// WaitChecked returns once Serve has run every readiness check once (at
// once without checks), so a caller can say "ready" only when health
// reports the truth; or when ctx ends.
func (s *Server) WaitChecked(ctx context.Context) error {
	select {
	case <-s.ready.checked:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *readiness) markChecked() { r.checkedOnce.Do(func() { close(r.checked) }) }

// SetReadiness makes service's health follow check. Call before serving.
func (s *Server) SetReadiness(service string, check ReadinessCheck) {
	s.ready.mu.Lock()
	defer s.ready.mu.Unlock()
	s.ready.checks[service] = check
}

func (r *readiness) markServing(services map[string]grpc.ServiceInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.services = r.services[:0]
	for name := range services {
		r.services = append(r.services, name)
		if _, checked := r.checks[name]; checked {
			r.failing[name] = true
		}
	}
	r.publish()
}

// publish sets every status from failing; r.mu is held.
func (r *readiness) publish() {
	all := healthpb.HealthCheckResponse_SERVING
	for _, name := range r.services {
		st := healthpb.HealthCheckResponse_SERVING
		if r.failing[name] {
			st, all = healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_NOT_SERVING
		}
		r.health.SetServingStatus(name, st)
	}
	r.health.SetServingStatus("", all)
}

// run checks at once and then every interval until ctx ends or the
// returned stop is called; stop waits for the checker to exit.
func (r *readiness) run(ctx context.Context) (stop func()) {
	r.mu.Lock()
	if len(r.checks) == 0 || r.started {
		r.mu.Unlock()
		r.markChecked()
		return func() {}
	}
	r.started = true
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.interval)
		defer t.Stop()
		// A second pass at once settles services that depend on others
		// on the same server (lifecycle on the renderer in the all-in-one),
		// instead of leaving them NOT_SERVING for a whole interval.
		r.checkAll(ctx)
		r.checkAll(ctx)
		r.markChecked()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			r.checkAll(ctx)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

func (r *readiness) checkAll(ctx context.Context) {
	r.mu.Lock()
	checks := make(map[string]ReadinessCheck, len(r.checks))
	for k, v := range r.checks {
		checks[k] = v
	}
	r.mu.Unlock()
	results := map[string]error{}
	for name, check := range checks {
		cctx, cancel := context.WithTimeout(ctx, r.interval)
		results[name] = check(cctx)
		cancel()
	}
	if ctx.Err() != nil {
		return // shutting down: Serve's Health.Shutdown decides now
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for name, err := range results {
		failing := err != nil
		if failing != r.failing[name] {
			changed = true
			if failing {
				r.log.Warn("not ready", "service", name, "reason", err)
			} else {
				r.log.Info("ready", "service", name)
			}
		}
		r.failing[name] = failing
	}
	if changed {
		r.publish()
	}
}
