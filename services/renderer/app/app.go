// Package app builds and runs the renderer service from its configuration.
// cmd/renderer and the all-in-one both use it.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/dustin/go-humanize"

	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
	"github.com/vcfsm/vcfsm/services/renderer/internal/sandbox"
	"github.com/vcfsm/vcfsm/services/renderer/internal/server"
)

// Isolation modes.
const (
	// IsolationProcess renders in a pool of worker processes bounded in
	// time and memory: the default, and the only safe mode for bundles
	// from outside.
	IsolationProcess = "process"
	// IsolationInProcess renders in the service's own process, without
	// bounds: for development and debugging only.
	IsolationInProcess = "in-process"
)

// Config is the renderer service's configuration.
type Config struct {
	// Isolation is IsolationProcess or IsolationInProcess.
	Isolation string
	// Workers is the number of worker processes.
	Workers int
	// Queue is how many renders may wait for a worker (0: four per
	// worker); one principal holds at most half the workers and half the
	// queue, and a render beyond is refused (REST 429).
	Queue int
	// Timeout bounds the wall time of one render.
	Timeout time.Duration
	// MemoryLimit bounds the memory of one worker.
	MemoryLimit ByteSize
	// CacheSize is the number of parsed bundles kept (per worker).
	CacheSize int
	// Telemetry receives the service's metrics; nil: none served.
	Telemetry *observability.Telemetry
}

// DefaultConfig returns the defaults the flags start from.
func DefaultConfig() Config {
	return Config{
		Isolation:   IsolationProcess,
		Workers:     runtime.NumCPU(),
		Timeout:     10 * time.Second,
		MemoryLimit: 512 << 20,
		CacheSize:   32,
	}
}

// RegisterFlags binds the configuration to flags; cli.Parse also reads
// each from VCFSM_<FLAG_NAME> (e.g. VCFSM_RENDER_TIMEOUT), which the command
// line overrides.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	*c = DefaultConfig()
	fs.StringVar(&c.Isolation, "render-isolation", c.Isolation, "where bundle templates run: process (worker processes bounded by --render-timeout and --render-memory-limit) or in-process (no bounds; development only)")
	fs.IntVar(&c.Workers, "render-workers", c.Workers, "number of render worker processes, i.e. renders in parallel")
	fs.IntVar(&c.Queue, "render-queue", c.Queue, "renders that may wait for a worker (0: four per worker); one caller may hold at most half the workers and half the queue, renders beyond are refused (REST 429)")
	fs.DurationVar(&c.Timeout, "render-timeout", c.Timeout, "longest time one render may take before its worker is killed")
	fs.Var(&c.MemoryLimit, "render-memory-limit", "most memory one render worker may use before it is killed, e.g. 512MiB")
	fs.IntVar(&c.CacheSize, "render-cache-size", c.CacheSize, "number of parsed bundles kept per worker, keyed by digest")
}

// ByteSize is a flag value for sizes such as 512MiB or 1GB.
type ByteSize int64

// Set implements flag.Value.
func (b *ByteSize) Set(s string) error {
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return err
	}
	*b = ByteSize(n)
	return nil
}

func (b *ByteSize) String() string {
	if b == nil {
		return ""
	}
	return humanize.IBytes(uint64(*b))
}

// MaybeRunWorker returns at once unless the process was started as a render
// worker; then it renders until its parent closes the pipe and exits. The
// renderer re-executes its own binary for its workers, so every binary that
// runs the renderer (cmd/renderer, the all-in-one, a test binary through
// TestMain) calls this first thing.
func MaybeRunWorker() { sandbox.MaybeRunWorker() }

// Service is a running renderer service.
type Service struct {
	handler *server.Handler
	close   func() error
	// ready reports a pool without a live worker (all crashed and not yet
	// replaced); nil with in-process rendering.
	ready grpcx.ReadinessCheck
}

// New builds the service; with process isolation it starts the workers.
func New(_ context.Context, cfg Config, log *slog.Logger) (*Service, error) {
	defaults := DefaultConfig()
	if cfg.Isolation == "" {
		cfg.Isolation = defaults.Isolation
	}
	if cfg.CacheSize == 0 {
		cfg.CacheSize = defaults.CacheSize
	}
	switch cfg.Isolation {
	case IsolationProcess:
		if cfg.Workers == 0 {
			cfg.Workers = defaults.Workers
		}
		if cfg.Timeout == 0 {
			cfg.Timeout = defaults.Timeout
		}
		if cfg.MemoryLimit == 0 {
			cfg.MemoryLimit = defaults.MemoryLimit
		}
		pool, err := sandbox.New(sandbox.Config{
			Workers:        cfg.Workers,
			Queue:          cfg.Queue,
			Timeout:        cfg.Timeout,
			MemoryLimit:    int64(cfg.MemoryLimit),
			CacheSize:      cfg.CacheSize,
			IsolateNetwork: true,
			Logger:         log,
		})
		if err != nil {
			return nil, err
		}
		log.Info("render workers ready", "workers", cfg.Workers, "timeout", cfg.Timeout, "memory_limit", cfg.MemoryLimit.String())
		tel := observability.Or(cfg.Telemetry)
		poolGauges(tel, pool)
		ready := func(context.Context) error {
			if live, _, _ := pool.Stats(); live == 0 {
				return errors.New("no render worker is running; replacements are being started")
			}
			return nil
		}
		return &Service{handler: server.NewHandler(measure(tel, pool)), close: pool.Close, ready: ready}, nil
	case IsolationInProcess:
		engine, err := render.NewEngine(cfg.CacheSize)
		if err != nil {
			return nil, err
		}
		log.Warn("rendering in-process: bundle templates run without time or memory bounds (--render-isolation=in-process is for development only)")
		return &Service{handler: server.NewHandler(measure(observability.Or(cfg.Telemetry), engine)), close: func() error { return nil }}, nil
	}
	return nil, fmt.Errorf("--render-isolation: %q is neither %s nor %s", cfg.Isolation, IsolationProcess, IsolationInProcess)
}

// Register adds the gRPC service and its error table to srv.
func (s *Service) Register(srv *grpcx.Server) {
	rendererv1.RegisterRendererServiceServer(srv, s.handler)
	srv.RegisterErrors(rendererv1.RendererService_ServiceDesc.ServiceName, server.ErrorTable)
	if s.ready != nil {
		srv.SetReadiness(rendererv1.RendererService_ServiceDesc.ServiceName, s.ready)
	}
}

// Close stops the render workers.
func (s *Service) Close() error { return s.close() }
