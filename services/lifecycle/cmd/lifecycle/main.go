// Command lifecycle runs the lifecycle service on its own gRPC port.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/services/lifecycle/app"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "lifecycle:", err)
		os.Exit(1)
	}
}

func run() error {
	var common cli.Common
	var cfg app.Config
	fs := flag.NewFlagSet("lifecycle", flag.ExitOnError)
	common.RegisterFlags(fs)
	cfg.RegisterFlags(fs)
	listen := fs.String("listen", cli.EnvOr("VCFSM_LIFECYCLE_LISTEN", "127.0.0.1:9091"), "gRPC listen address (env VCFSM_LIFECYCLE_LISTEN)")
	_ = fs.Parse(os.Args[1:])

	log, err := common.Logger(os.Stderr)
	if err != nil {
		return err
	}
	tokens, peerToken, err := common.Auth(cfg.DataDir, log)
	if err != nil {
		return err
	}
	cfg.PeerToken = peerToken
	ctx, stop := cli.SignalContext()
	defer stop()
	svc, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() { _ = svc.Close() }()
	if err := svc.Start(ctx); err != nil {
		return err
	}
	return cli.ServeGRPC(ctx, log, *listen, tokens, svc)
}
