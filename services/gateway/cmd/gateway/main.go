// Command gateway serves the REST /v2 surface in front of a lifecycle
// service reached over gRPC.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/gateway/app"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run() error {
	var common cli.Common
	fs := flag.NewFlagSet("gateway", flag.ExitOnError)
	common.RegisterFlags(fs)
	listen := fs.String("listen", cli.EnvOr("VCFSM_HTTP_LISTEN", "127.0.0.1:8080"), "REST listen address (env VCFSM_HTTP_LISTEN)")
	lifecycleAddr := fs.String("lifecycle", cli.EnvOr("VCFSM_LIFECYCLE_ADDR", "127.0.0.1:9091"), "lifecycle gRPC address (env VCFSM_LIFECYCLE_ADDR)")
	metricsListen := fs.String("metrics-listen", cli.EnvOr("VCFSM_METRICS_LISTEN", ""), "address serving Prometheus /metrics, e.g. 127.0.0.1:9100; empty: no metrics listener (env VCFSM_METRICS_LISTEN)")
	_ = fs.Parse(os.Args[1:])

	log, err := common.Logger(os.Stderr)
	if err != nil {
		return err
	}
	sigCtx, stop := cli.SignalContext()
	defer stop()
	ctx, cancel := context.WithCancel(sigCtx)
	defer cancel()
	tel, stopTelemetry, err := cli.StartTelemetry(ctx, "gateway", *metricsListen, log)
	if err != nil {
		return err
	}
	defer stopTelemetry()

	// The gateway forwards each caller's own bearer token; it holds none.
	conn, err := grpcx.Dial(*lifecycleAddr, "", tel.DialOptions()...)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	handler, err := app.New(ctx, conn, log, tel)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: *listen, Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("gateway serving", "listen", *listen, "lifecycle", *lifecycleAddr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
