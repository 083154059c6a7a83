// Package app builds and runs the lifecycle service from its configuration.
// cmd/lifecycle and the all-in-one both use it.
package app

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/boltstore"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/server"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage"
)

// Config is the lifecycle service's configuration.
type Config struct {
	// DataDir holds the bbolt file and extracted bundles.
	DataDir string
	// AllowInsecureSources permits http:// bundle sources.
	AllowInsecureSources bool
	// Addresses of the peer services.
	CompatibilityAddr string
	RendererAddr      string
	PrecheckAddr      string
	// PeerToken is sent to the peer services; set by the caller.
	PeerToken string
}

// RegisterFlags binds the configuration to flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.DataDir, "data-dir", cli.EnvOr("VCFSM_DATA_DIR", "./data"), "directory for the embedded store and bundles (env VCFSM_DATA_DIR)")
	fs.BoolVar(&c.AllowInsecureSources, "allow-insecure-sources", false, "accept http:// bundle sources")
	fs.StringVar(&c.CompatibilityAddr, "compatibility", cli.EnvOr("VCFSM_COMPATIBILITY_ADDR", "127.0.0.1:9092"), "compatibility service gRPC address (env VCFSM_COMPATIBILITY_ADDR)")
	fs.StringVar(&c.RendererAddr, "renderer", cli.EnvOr("VCFSM_RENDERER_ADDR", "127.0.0.1:9093"), "renderer service gRPC address (env VCFSM_RENDERER_ADDR)")
	fs.StringVar(&c.PrecheckAddr, "precheck", cli.EnvOr("VCFSM_PRECHECK_ADDR", "127.0.0.1:9094"), "precheck service gRPC address (env VCFSM_PRECHECK_ADDR)")
}

// Service is a running lifecycle service.
type Service struct {
	store   store.Store
	handler *server.Handler
	log     *slog.Logger
}

// New opens the store and builds the service.
func New(_ context.Context, cfg Config, log *slog.Logger) (*Service, error) {
	st, err := boltstore.Open(filepath.Join(cfg.DataDir, "lifecycle.db"), storage.Schema)
	if err != nil {
		return nil, fmt.Errorf("lifecycle store: %w", err)
	}
	mgr := lifecycle.NewManager(lifecycle.Config{AllowInsecureSources: cfg.AllowInsecureSources}, storage.NewServices(st))
	return &Service{store: st, handler: server.NewHandler(mgr), log: log}, nil
}

// Register adds the lifecycle gRPC service and its error table to srv.
func (s *Service) Register(srv *grpcx.Server) {
	lifecyclev1.RegisterLifecycleServiceServer(srv, s.handler)
	srv.RegisterErrors(lifecyclev1.LifecycleService_ServiceDesc.ServiceName, server.ErrorTable)
}

// Start runs the background work (downloads, controllers) until ctx ends.
func (s *Service) Start(context.Context) error { return nil }

// Close releases the store.
func (s *Service) Close() error { return s.store.Close() }
