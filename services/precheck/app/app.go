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
	"os"
	"strings"
	"time"

	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/precheck/internal/dynamic"
	"github.com/vcfsm/vcfsm/services/precheck/internal/hook"
	"github.com/vcfsm/vcfsm/services/precheck/internal/server"
)

// Config is the precheck service's configuration. Zero values take the
// defaults, so Config{} is a working configuration.
type Config struct {
	// HookToken is sent as the bearer token to every hook; empty means a
	// random token generated at start.
	HookToken string
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

	// envErr is a bad environment default, reported by New.
	envErr error
}

// envFlags are the flags with an environment default.
var envFlags = []struct{ flag, env string }{
	{"hook-token", "VCFSM_HOOK_TOKEN"},
	{"hook-timeout", "VCFSM_HOOK_TIMEOUT"},
	{"hook-max-response-bytes", "VCFSM_HOOK_MAX_RESPONSE_BYTES"},
	{"hook-concurrency", "VCFSM_HOOK_CONCURRENCY"},
	{"precheck-registry-timeout", "VCFSM_PRECHECK_REGISTRY_TIMEOUT"},
}

// RegisterFlags binds the configuration to flags. The environment
// variables set the defaults; flags on the command line win.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.HookToken, "hook-token", "", "bearer token sent to services' pre-check hooks (env VCFSM_HOOK_TOKEN); default: a random token per start")
	fs.DurationVar(&c.HookTimeout, "hook-timeout", hook.DefaultTimeout, "time limit of one pre-check hook call (env VCFSM_HOOK_TIMEOUT)")
	fs.Int64Var(&c.HookMaxResponseBytes, "hook-max-response-bytes", hook.DefaultMaxResponseBytes, "largest pre-check hook answer read (env VCFSM_HOOK_MAX_RESPONSE_BYTES)")
	fs.IntVar(&c.HookConcurrency, "hook-concurrency", hook.DefaultConcurrency, "pre-check hook calls in flight per fan-out (env VCFSM_HOOK_CONCURRENCY)")
	fs.DurationVar(&c.RegistryTimeout, "precheck-registry-timeout", dynamic.DefaultRegistryTimeout, "time limit of the image look-ups of one dynamic pre-check run (env VCFSM_PRECHECK_REGISTRY_TIMEOUT)")
	fs.Func("resolve", "HOST=ADDR[:PORT]: reach pre-check hook host HOST at ADDR; a port replaces the hook's _port; repeatable (env VCFSM_RESOLVE, comma-separated); other names use the system resolver", func(v string) error {
		c.Resolve = append(c.Resolve, v)
		return nil
	})

	var errs []error
	for _, e := range envFlags {
		if v, ok := os.LookupEnv(e.env); ok {
			if err := fs.Set(e.flag, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", e.env, v, err))
			}
		}
	}
	if v := os.Getenv("VCFSM_RESOLVE"); v != "" {
		for _, entry := range strings.Split(v, ",") {
			if entry = strings.TrimSpace(entry); entry != "" {
				c.Resolve = append(c.Resolve, entry)
			}
		}
	}
	c.envErr = errors.Join(errs...)
}

// Service is a running precheck service.
type Service struct {
	handler *server.Handler
}

// New builds the service.
func New(_ context.Context, cfg Config, log *slog.Logger) (*Service, error) {
	if cfg.envErr != nil {
		return nil, fmt.Errorf("precheck configuration: %w", cfg.envErr)
	}
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
