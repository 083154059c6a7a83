// Command gateway serves the REST /v2 surface in front of a lifecycle
// service reached over gRPC.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/gateway/app"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	var common cli.Common
	var edge app.Config
	fs := flag.NewFlagSet("gateway", flag.ExitOnError)
	common.RegisterFlags(fs)
	edge.RegisterFlags(fs)
	listen := fs.String("listen", "127.0.0.1:8080", "REST listen address")
	lifecycleAddr := fs.String("lifecycle", "127.0.0.1:9091", "lifecycle gRPC address: host:port or dns:///name:port (every address the name resolves to) or a comma-separated host:port list; calls go round-robin to the replicas reporting SERVING")
	dataDir := fs.String("data-dir", "./data", "directory holding the development token (shared with lifecycle when both run on one machine)")
	metricsListen := fs.String("metrics-listen", "", "address serving Prometheus /metrics, e.g. 127.0.0.1:9100; empty: no metrics listener")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}

	log, err := common.Logger(os.Stderr)
	if err != nil {
		return err
	}
	// The gateway checks tokens before reading a body, then forwards each
	// caller's own token, which lifecycle checks again with the method's
	// permission; it sends no token of its own.
	tokens, _, err := common.AcceptedTokens(*dataDir, log)
	if err != nil {
		return err
	}
	dialOpts, err := common.GRPCTLS.DialOptions()
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

	// Every lifecycle replica behind the address gets calls, round-robin,
	// while its health reports the lifecycle service SERVING.
	conn, err := grpcx.DialService(*lifecycleAddr, lifecyclev1.LifecycleService_ServiceDesc.ServiceName, "", append(dialOpts, tel.DialOptions()...)...)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	handler, err := app.New(ctx, conn, app.Options{Logger: log, Tokens: tokens, Limits: edge.Limits, Telemetry: tel})
	if err != nil {
		return err
	}
	srv, err := edge.HTTPServer(handler)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- app.Serve(srv, lis) }()
	log.Info("gateway serving", "rest", app.Scheme(srv)+"://"+lis.Addr().String()+"/v2", "console", app.Scheme(srv)+"://"+lis.Addr().String()+"/ui/", "lifecycle", *lifecycleAddr, "mtls", common.GRPCTLS.Enabled())
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
