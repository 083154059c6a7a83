// Package app builds and runs the renderer service from its configuration.
// cmd/renderer and the all-in-one both use it.
package app

import (
	"context"
	"flag"
	"log/slog"

	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/renderer/internal/server"
)

// Config is the renderer service's configuration.
type Config struct{}

// RegisterFlags binds the configuration to flags.
func (c *Config) RegisterFlags(*flag.FlagSet) {}

// Service is a running renderer service.
type Service struct {
	handler *server.Handler
}

// New builds the service.
func New(_ context.Context, _ Config, _ *slog.Logger) (*Service, error) {
	return &Service{handler: server.NewHandler()}, nil
}

// Register adds the gRPC service and its error table to srv.
func (s *Service) Register(srv *grpcx.Server) {
	rendererv1.RegisterRendererServiceServer(srv, s.handler)
	srv.RegisterErrors(rendererv1.RendererService_ServiceDesc.ServiceName, server.ErrorTable)
}

// Close releases the service's resources.
func (s *Service) Close() error { return nil }
