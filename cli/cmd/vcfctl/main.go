// Command vcfctl is the command-line client of the VCF Service Manager's
// REST /v2 surface.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/vcfsm/vcfsm/cli/internal/vcfctl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := vcfctl.Run(ctx, os.Args[1:], vcfctl.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}
