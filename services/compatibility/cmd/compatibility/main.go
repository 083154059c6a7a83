// Command compatibility runs the compatibility service on its own gRPC port.
package main

import (
	"context"
	"log/slog"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/compatibility/app"
)

func main() {
	var cfg app.Config
	cli.Binary{
		Name:          "compatibility",
		DefaultListen: "127.0.0.1:9092",
		RegisterFlags: cfg.RegisterFlags,
		Start: func(ctx context.Context, log *slog.Logger, _ cli.Peer, tel *observability.Telemetry) (cli.Service, error) {
			cfg.Telemetry = tel
			return app.New(ctx, cfg, log)
		},
	}.Main()
}
