// Command renderer runs the renderer service on its own gRPC port.
package main

import (
	"context"
	"log/slog"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/renderer/app"
)

func main() {
	// The renderer re-executes this binary for its sandboxed workers.
	app.MaybeRunWorker()
	var cfg app.Config
	cli.Binary{
		Name:          "renderer",
		DefaultListen: "127.0.0.1:9093",
		RegisterFlags: cfg.RegisterFlags,
		Start: func(ctx context.Context, log *slog.Logger, _ cli.Peer, tel *observability.Telemetry) (cli.Service, error) {
			cfg.Telemetry = tel
			return app.New(ctx, cfg, log)
		},
	}.Main()
}
