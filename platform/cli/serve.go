package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/grpcx"
)

// Registrar adds gRPC services (and their error tables) to a server.
type Registrar interface {
	Register(*grpcx.Server)
}

// ServerConfig builds the gRPC server configuration of the common flags.
func (c *Common) ServerConfig(log *slog.Logger, tokens *auth.Tokens) (grpcx.ServerConfig, error) {
	creds, err := c.GRPCTLS.ServerCreds()
	if err != nil {
		return grpcx.ServerConfig{}, err
	}
	return grpcx.ServerConfig{Logger: log, Tokens: tokens, Creds: creds, Limits: c.Limits.Limits}, nil
}

// ServeGRPC serves the registrars' services on addr with auth, health and
// reflection until ctx ends, then drains for up to 10 seconds.
func ServeGRPC(ctx context.Context, cfg grpcx.ServerConfig, addr string, regs ...Registrar) error {
	srv := grpcx.NewServer(cfg)
	for _, r := range regs {
		r.Register(srv)
	}
	if cfg.Telemetry != nil {
		cfg.Telemetry.InitializeServerMetrics(srv.Server)
	}
	srv.MarkServing()
	lis, err := grpcx.Listen(addr)
	if err != nil {
		return err
	}
	cfg.Logger.Info("serving gRPC", "listen", lis.Addr().String(), "mtls", cfg.Creds != nil)
	return srv.Serve(ctx, lis, 10*time.Second)
}
