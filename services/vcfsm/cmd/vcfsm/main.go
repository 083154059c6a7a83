// Command vcfsm runs the whole VCF Service Manager in one process on the
// embedded store: `vcfsm` with no flags is enough to start.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/vcfsm/vcfsm/platform/cli"
	renderer "github.com/vcfsm/vcfsm/services/renderer/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

func main() {
	// The renderer re-executes this binary for its sandboxed workers.
	renderer.MaybeRunWorker()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "vcfsm:", err)
		os.Exit(1)
	}
}

func run() error {
	var cfg app.Config
	fs := flag.NewFlagSet("vcfsm", flag.ExitOnError)
	cfg.RegisterFlags(fs)
	if err := cli.Parse(fs, os.Args[1:]); err != nil {
		return err
	}

	log, err := cfg.Common.Logger(os.Stderr)
	if err != nil {
		return err
	}
	ctx, stop := cli.SignalContext()
	defer stop()
	sys, err := app.Start(ctx, cfg, log)
	if err != nil {
		return err
	}
	return sys.Wait()
}
