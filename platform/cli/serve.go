package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/observability"
)

// Registrar adds gRPC services (and their error tables) to a server.
type Registrar interface {
	Register(*grpcx.Server)
}

// ServeGRPC serves the registrars' services on addr with auth, health and
// reflection until ctx ends, then drains for up to 10 seconds.
func ServeGRPC(ctx context.Context, log *slog.Logger, addr string, tokens *auth.Tokens, tel *observability.Telemetry, regs ...Registrar) error {
	srv := grpcx.NewServer(grpcx.ServerConfig{Logger: log, Tokens: tokens, Telemetry: tel})
	for _, r := range regs {
		r.Register(srv)
	}
	if tel != nil {
		tel.InitializeServerMetrics(srv.Server)
	}
	srv.MarkServing()
	lis, err := grpcx.Listen(addr)
	if err != nil {
		return err
	}
	log.Info("serving gRPC", "listen", lis.Addr().String())
	return srv.Serve(ctx, lis, 10*time.Second)
}
