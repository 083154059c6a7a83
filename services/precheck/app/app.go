// Package app builds and runs the precheck service from its configuration.
// cmd/precheck and the all-in-one both use it.
package app

import (
	"context"
	"flag"
	"log/slog"

	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/precheck/internal/server"
)

// Config is the precheck service's configuration.
type Config struct{}

// RegisterFlags binds the configuration to flags.
func (c *Config) RegisterFlags(*flag.FlagSet) {}

// Service is a running precheck service.
type Service struct {
	handler *server.Handler
}

// New builds the service.
func New(_ context.Context, _ Config, _ *slog.Logger) (*Service, error) {
	return &Service{handler: server.NewHandler()}, nil
}

// Register adds the gRPC service and its error table to srv.
func (s *Service) Register(srv *grpcx.Server) {
	precheckv1.RegisterPrecheckServiceServer(srv, s.handler)
	srv.RegisterErrors(precheckv1.PrecheckService_ServiceDesc.ServiceName, server.ErrorTable)
}

// Close releases the service's resources.
func (s *Service) Close() error { return nil }
