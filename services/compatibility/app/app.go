// Package app builds and runs the compatibility service from its configuration.
// cmd/compatibility and the all-in-one both use it.
package app

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/compat"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/pkgdoc"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/server"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/upgradepath"
)

// Defaults of the configuration; a zero Config uses them.
const (
	DefaultCacheSize     = 10_000
	DefaultMaxBatchItems = compat.DefaultMaxBatchItems
)

// Config is the compatibility service's configuration.
type Config struct {
	// CacheSize is how many parsed constraint expressions are kept.
	CacheSize int
	// MaxBatchItems bounds the items of one BatchEvaluate call.
	MaxBatchItems int
	// Telemetry receives the service's metrics; nil: none served.
	Telemetry *observability.Telemetry
}

// RegisterFlags binds the configuration to flags. The names carry the
// compat- prefix because the all-in-one registers every service's flags in
// one set.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.CacheSize, "compat-cache-size", DefaultCacheSize, "parsed constraint expressions the compatibility service keeps (least recently used go first)")
	fs.IntVar(&c.MaxBatchItems, "compat-max-batch-items", DefaultMaxBatchItems, "most items one BatchEvaluate call may carry")
}

// Service is a running compatibility service.
type Service struct {
	handler *server.Handler
}

// New builds the service.
func New(_ context.Context, cfg Config, log *slog.Logger) (*Service, error) {
	if cfg.CacheSize == 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.MaxBatchItems == 0 {
		cfg.MaxBatchItems = DefaultMaxBatchItems
	}
	if cfg.CacheSize < 0 || cfg.MaxBatchItems < 0 {
		return nil, fmt.Errorf("compatibility: --compat-cache-size (%d) and --compat-max-batch-items (%d) must be positive", cfg.CacheSize, cfg.MaxBatchItems)
	}
	cache, err := constraint.NewCache(cfg.CacheSize)
	if err != nil {
		return nil, fmt.Errorf("compatibility: %w", err)
	}
	eval := compat.NewEvaluator(cache, cfg.MaxBatchItems)
	evaluations := observability.Or(cfg.Telemetry).NewCounterVec("compatibility_evaluations_total",
		"Compatibility verdicts by kind (install, upgrade, supervisor_upgrade, batch) and result (compatible, blocked, invalid).", "kind", "result")
	eval.SetObserver(func(kind, result string) { evaluations.WithLabelValues(kind, result).Inc() })
	if log != nil {
		log.Debug("compatibility service configured", "cache_size", cfg.CacheSize, "max_batch_items", cfg.MaxBatchItems)
	}
	return &Service{handler: server.NewHandler(eval, pkgdoc.NewValidator(cache), upgradepath.NewPlanner(eval))}, nil
}

// Register adds the gRPC service and its error table to srv.
func (s *Service) Register(srv *grpcx.Server) {
	compatibilityv1.RegisterCompatibilityServiceServer(srv, s.handler)
	srv.RegisterErrors(compatibilityv1.CompatibilityService_ServiceDesc.ServiceName, server.ErrorTable)
}

// Close releases the service's resources; it holds none beyond memory.
func (s *Service) Close() error { return nil }
