// Command lifecycle runs the lifecycle service on its own gRPC port.
package main

import (
	"context"
	"log/slog"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/lifecycle/app"
)

func main() {
	var cfg app.Config
	cli.Binary{
		Name:          "lifecycle",
		DefaultListen: "127.0.0.1:9091",
		RegisterFlags: cfg.RegisterFlags,
		DataDir:       func() string { return cfg.DataDir },
		Start: func(ctx context.Context, log *slog.Logger, peer cli.Peer, tel *observability.Telemetry) (cli.Service, error) {
			cfg.PeerToken, cfg.PeerDialOptions = peer.Token, peer.DialOptions
			cfg.Telemetry = tel
			svc, err := app.New(ctx, cfg, log)
			if err != nil {
				return nil, err
			}
			if err := svc.Start(ctx); err != nil {
				_ = svc.Close()
				return nil, err
			}
			return svc, nil
		},
	}.Main()
}
