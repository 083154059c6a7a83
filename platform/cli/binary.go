package cli

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"google.golang.org/grpc"

	"github.com/vcfsm/vcfsm/platform/observability"
)

// Service is a built service a Binary serves.
type Service interface {
	Registrar
	Close() error
}

// Binary is the main of a single-service binary: common flags, logging,
// tokens, signal handling and a gRPC server around one service.
type Binary struct {
	// Name prefixes errors and names the flag set.
	Name string
	// DefaultListen is the gRPC address when neither --listen nor
	// VCFSM_<NAME>_LISTEN is given.
	DefaultListen string
	// RegisterFlags binds the service's own flags.
	RegisterFlags func(*flag.FlagSet)
	// DataDir returns the service's data directory when it has its own
	// --data-dir flag; otherwise the binary adds one, holding the
	// development token.
	DataDir func() string
	// Start builds and starts the service; peer is how it calls other
	// services, tel its metrics and tracing. The service stops when ctx
	// ends.
	Start func(ctx context.Context, log *slog.Logger, peer Peer, tel *observability.Telemetry) (Service, error)
}

// Peer is how a service calls the other services: the token it sends and
// the dial options (mTLS) of its connections.
type Peer struct {
	Token       string
	DialOptions []grpc.DialOption
}

// Main runs the binary and exits non-zero on error.
func (b Binary) Main() {
	if err := b.run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", b.Name, err)
		os.Exit(1)
	}
}

func (b Binary) run(args []string) error {
	var common Common
	fs := flag.NewFlagSet(b.Name, flag.ExitOnError)
	common.RegisterFlags(fs)
	b.RegisterFlags(fs)
	listen := fs.String("listen", b.DefaultListen, "gRPC listen address")
	metricsListen := fs.String("metrics-listen", "", "address serving Prometheus /metrics, e.g. 127.0.0.1:9100; empty: no metrics listener")
	dataDir := b.DataDir
	if dataDir == nil {
		dir := fs.String("data-dir", "./data", "directory holding the development token")
		dataDir = func() string { return *dir }
	}
	if err := Parse(fs, args); err != nil {
		return err
	}
	log, err := common.Logger(os.Stderr)
	if err != nil {
		return err
	}
	tokens, peerToken, err := common.Auth(dataDir(), log)
	if err != nil {
		return err
	}
	dialOpts, err := common.GRPCTLS.DialOptions()
	if err != nil {
		return err
	}
	srvCfg, err := common.ServerConfig(log, tokens)
	if err != nil {
		return err
	}
	sigCtx, stop := SignalContext()
	defer stop()
	// The service's background work ends with ctx, which must end before
	// Close waits for it, whether a signal or a serving error stopped us.
	ctx, cancel := context.WithCancel(sigCtx)
	defer cancel()
	tel, stopTelemetry, err := StartTelemetry(ctx, b.Name, *metricsListen, log)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	svc, err := b.Start(ctx, log, Peer{Token: peerToken, DialOptions: dialOpts}, tel)
	if err != nil {
		return err
	}
	srvCfg.Telemetry = tel
	err = ServeGRPC(ctx, srvCfg, *listen, svc)
	cancel()
	if cerr := svc.Close(); cerr != nil {
		log.Warn("close", "error", cerr)
	}
	return err
}

// StartTelemetry builds the process's telemetry (tracing from the standard
// OTEL_* environment) and, when metricsListen is set, serves /metrics
// there until ctx ends or stop is called. stop also flushes the traces.
func StartTelemetry(ctx context.Context, name, metricsListen string, log *slog.Logger) (*observability.Telemetry, func(), error) {
	tel, err := observability.New(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	if observability.TracingEnabled() {
		log.Info("exporting traces with OTLP", "endpoint", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
	}
	var ms *observability.MetricsServer
	if metricsListen != "" {
		if ms, err = tel.ServeMetrics(ctx, metricsListen, log); err != nil {
			return nil, nil, err
		}
	}
	return tel, func() {
		if ms != nil {
			_ = ms.Stop()
		}
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(flushCtx); err != nil {
			log.Warn("flush traces", "error", err)
		}
	}, nil
}
