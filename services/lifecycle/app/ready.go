package app

import (
	"context"
	"errors"
	"fmt"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage"
)

// peer is a service the lifecycle service cannot work without.
type peer struct {
	addr    string
	service string
	health  healthpb.HealthClient
}

// readinessProbeKey is read (and never written) to see the store answer.
const readinessProbeKey = "readiness-probe"

// ready reports why the service cannot work now: its store does not
// answer, or a peer (compatibility, renderer, precheck) is not SERVING.
// gRPC health follows it, and the gateway's /readyz follows that.
func (s *Service) ready(ctx context.Context) error {
	if _, err := s.store.Get(ctx, storage.Schema.Buckets[0], readinessProbeKey); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("store unreachable: %w", err)
	}
	for _, p := range s.peers {
		resp, err := p.health.Check(ctx, &healthpb.HealthCheckRequest{Service: p.service})
		if err != nil {
			return fmt.Errorf("peer %s at %s: %w", p.service, p.addr, err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			return fmt.Errorf("peer %s at %s is %s", p.service, p.addr, resp.GetStatus())
		}
	}
	return nil
}
