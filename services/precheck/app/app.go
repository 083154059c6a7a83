// Package app builds and runs the precheck service from its configuration.
// cmd/precheck and the all-in-one both use it.
package app

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/precheck/internal/dynamic"
	"github.com/vcfsm/vcfsm/services/precheck/internal/hook"
	"github.com/vcfsm/vcfsm/services/precheck/internal/server"
)

// Config is the precheck service's configuration. Zero values take the
// defaults, so Config{} is a working configuration.
type Config struct {
	// HookToken is sent as the bearer token to every hook; empty means
	// HookTokenFile, or a random token generated at start.
	HookToken string
	// HookTokenFile holds the hook token (mode 0600).
	HookTokenFile string
	// HookTimeout bounds one hook call (default 30s).
	HookTimeout time.Duration
	// HookMaxResponseBytes bounds a hook's answer (default 1 MiB).
	HookMaxResponseBytes int64
	// HookConcurrency bounds the hook calls in flight per DispatchHooks
	// (default 256).
	HookConcurrency int
	// Resolve maps hook host names to addresses: HOST=ADDR[:PORT].
	Resolve []string
	// RegistryTimeout bounds the image look-ups of one dynamic pre-check
	// run (default 30s).
	RegistryTimeout time.Duration
	// Telemetry receives the service's metrics and traces; nil: none.
	Telemetry *observability.Telemetry
}

// RegisterFlags binds the configuration to flags; cli.Parse also reads
// each from VCFSM_<FLAG_NAME> (e.g. VCFSM_HOOK_TIMEOUT) and the config file.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Func("hook-token", "bearer token sent to services' pre-check hooks; prefer --hook-token-file", func(v string) error {
		c.HookToken = v
		return nil
	})
	fs.StringVar(&c.HookTokenFile, "hook-token-file", "", "file holding the bearer token sent to services' pre-check hooks (mode 0600); default: a random token per start")
	fs.DurationVar(&c.HookTimeout, "hook-timeout", hook.DefaultTimeout, "time limit of one pre-check hook call")
	fs.Int64Var(&c.HookMaxResponseBytes, "hook-max-response-bytes", hook.DefaultMaxResponseBytes, "largest pre-check hook answer read")
	fs.IntVar(&c.HookConcurrency, "hook-concurrency", hook.DefaultConcurrency, "pre-check hook calls in flight per fan-out")
	fs.DurationVar(&c.RegistryTimeout, "precheck-registry-timeout", dynamic.DefaultRegistryTimeout, "time limit of the image look-ups of one dynamic pre-check run")
	fs.Func("resolve", "HOST=ADDR[:PORT]: reach pre-check hook host HOST at ADDR; a port replaces the hook's _port; repeatable or comma-separated; other names use the system resolver", func(v string) error {
		for _, entry := range strings.Split(v, ",") {
			if entry = strings.TrimSpace(entry); entry != "" {
				c.Resolve = append(c.Resolve, entry)
			}
		}
		return nil
	})
}

// Service is a running precheck service.
type Service struct {
	handler *server.Handler
}

// New builds the service.
func New(_ context.Context, cfg Config, log *slog.Logger) (*Service, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.HookTimeout < 0 || cfg.HookMaxResponseBytes < 0 || cfg.HookConcurrency < 0 || cfg.RegistryTimeout < 0 {
		return nil, errors.New("precheck configuration: --hook-timeout, --hook-max-response-bytes, --hook-concurrency and --precheck-registry-timeout must not be negative")
	}
	resolver, err := hook.NewResolver(cfg.Resolve, nil)
	if err != nil {
		return nil, fmt.Errorf("--resolve: %w", err)
	}
	token := cfg.HookToken
	if cfg.HookTokenFile != "" {
		raw, err := cli.ReadSecretFile(cfg.HookTokenFile)
		if err != nil {
			return nil, fmt.Errorf("--hook-token-file: %w", err)
		}
		token = strings.TrimSpace(raw)
	}
	if token == "" {
		// The platform issues a token for hook calls; without one
		// configured it is random, so no guessable default exists.
		token = rand.Text()
		log.Info("no --hook-token configured: pre-check hooks receive a random bearer token generated at start")
	}
	tel := observability.Or(cfg.Telemetry)
	hookCalls := tel.NewCounterVec("precheck_hook_calls_total",
		"Pre-check hook calls made, by outcome (passed, blocked: the hook reported an error, failed: no valid answer).", "outcome")
	hookLatency := tel.NewHistogramVec("precheck_hook_duration_seconds",
		"Pre-check hook call latency by outcome.", observability.SlowBuckets, "outcome")
	checks := tel.NewCounterVec("precheck_dynamic_checks_total",
		"Dynamic pre-checks run, by check and result (Passed, Warning, Failed).", "check", "result")
	hooks, err := hook.NewDispatcher(hook.Options{
		Token:            token,
		Timeout:          cfg.HookTimeout,
		MaxResponseBytes: cfg.HookMaxResponseBytes,
		Concurrency:      cfg.HookConcurrency,
		Resolver:         resolver,
		Logger:           log,
		Observer: func(outcome string, d time.Duration) {
			hookCalls.WithLabelValues(outcome).Inc()
			hookLatency.WithLabelValues(outcome).Observe(d.Seconds())
		},
		Transport: tel.HTTPTransport,
	})
	if err != nil {
		return nil, err
	}
	checker := dynamic.NewChecker(dynamic.Options{RegistryTimeout: cfg.RegistryTimeout,
		Observer: func(check, status string) { checks.WithLabelValues(check, status).Inc() }})
	return &Service{handler: server.NewHandler(hooks, checker)}, nil
}

// Register adds the gRPC service and its error table to srv.
func (s *Service) Register(srv *grpcx.Server) {
	precheckv1.RegisterPrecheckServiceServer(srv, s.handler)
	srv.RegisterErrors(precheckv1.PrecheckService_ServiceDesc.ServiceName, server.ErrorTable)
}

// Close releases the service's resources; hook calls hold none between
// requests.
func (s *Service) Close() error { return nil }
