// Command precheck runs the precheck service on its own gRPC port.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/services/precheck/app"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "precheck:", err)
		os.Exit(1)
	}
}

func run() error {
	var common cli.Common
	var cfg app.Config
	fs := flag.NewFlagSet("precheck", flag.ExitOnError)
	common.RegisterFlags(fs)
	cfg.RegisterFlags(fs)
	listen := fs.String("listen", cli.EnvOr("VCFSM_PRECHECK_LISTEN", "127.0.0.1:9094"), "gRPC listen address (env VCFSM_PRECHECK_LISTEN)")
	dataDir := fs.String("data-dir", cli.EnvOr("VCFSM_DATA_DIR", "./data"), "directory holding the development token (env VCFSM_DATA_DIR)")
	_ = fs.Parse(os.Args[1:])

	log, err := common.Logger(os.Stderr)
	if err != nil {
		return err
	}
	tokens, _, err := common.Auth(*dataDir, log)
	if err != nil {
		return err
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	svc, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() { _ = svc.Close() }()
	return cli.ServeGRPC(ctx, log, *listen, tokens, svc)
}
