// Package app is the all-in-one: every service on one gRPC port, the REST
// gateway on one HTTP port, the embedded bbolt store, no setup. It is the
// one place that wires the services together; they still talk to each
// other over gRPC on real sockets, exactly as when deployed apart.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/observability"
	compatibility "github.com/vcfsm/vcfsm/services/compatibility/app"
	gateway "github.com/vcfsm/vcfsm/services/gateway/app"
	lifecycle "github.com/vcfsm/vcfsm/services/lifecycle/app"
	precheck "github.com/vcfsm/vcfsm/services/precheck/app"
	renderer "github.com/vcfsm/vcfsm/services/renderer/app"
)

// Config is the all-in-one's configuration.
type Config struct {
	Common     cli.Common
	GRPCListen string
	HTTPListen string
	// Gateway holds the REST edge's limits and HTTPS files.
	Gateway gateway.Config
	// DevTLS turns on HTTPS and mTLS with a CA and certificates generated
	// into the data directory on first start.
	DevTLS bool
	// MetricsListen serves Prometheus /metrics; empty: no listener.
	MetricsListen string
	// Telemetry, when set, replaces the one Start builds from the
	// environment (tests pass an in-memory tracer).
	Telemetry     *observability.Telemetry
	Lifecycle     lifecycle.Config
	Compatibility compatibility.Config
	Renderer      renderer.Config
	Precheck      precheck.Config
}

// RegisterFlags binds every service's flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	c.Common.RegisterFlags(fs)
	fs.StringVar(&c.GRPCListen, "grpc-listen", "127.0.0.1:9090", "gRPC listen address of all services")
	fs.StringVar(&c.HTTPListen, "http-listen", "127.0.0.1:8080", "REST listen address")
	fs.BoolVar(&c.DevTLS, "dev-tls", false, "serve HTTPS and gRPC over mTLS with a local CA and certificates written into <data-dir>/tls on first start (development)")
	c.Gateway.RegisterFlags(fs)
	fs.StringVar(&c.MetricsListen, "metrics-listen", "127.0.0.1:9100", "address serving Prometheus /metrics; empty: no metrics listener")
	c.Lifecycle.RegisterFlags(fs)
	c.Compatibility.RegisterFlags(fs)
	c.Renderer.RegisterFlags(fs)
	c.Precheck.RegisterFlags(fs)
}

// System is a running all-in-one.
type System struct {
	// GRPCAddr and HTTPAddr are the bound addresses (useful with port 0).
	GRPCAddr string
	HTTPAddr string
	// Scheme is "https" when the REST port serves TLS, else "http".
	Scheme string
	// Token is a bearer token the system accepts (the development token
	// unless tokens were configured).
	Token string
	// MetricsAddr is the bound metrics address ("" without a listener).
	MetricsAddr string
	// Telemetry is the system's metrics registry and tracer.
	Telemetry *observability.Telemetry

	log       *slog.Logger
	lifecycle *lifecycle.Service
	closers   []io.Closer
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	errMu     sync.Mutex
	err       error
}

// Start brings every service up and returns once they are listening.
func Start(ctx context.Context, cfg Config, log *slog.Logger) (*System, error) {
	sec, err := prepareSecurity(&cfg, log)
	if err != nil {
		return nil, err
	}
	grpcLis, err := grpcx.Listen(cfg.GRPCListen)
	if err != nil {
		return nil, err
	}
	httpLis, err := net.Listen("tcp", cfg.HTTPListen)
	if err != nil {
		_ = grpcLis.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.HTTPListen, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	s := &System{GRPCAddr: grpcLis.Addr().String(), HTTPAddr: httpLis.Addr().String(), Token: sec.peerToken, log: log, cancel: cancel}
	fail := func(err error) (*System, error) {
		cancel()
		_ = grpcLis.Close()
		_ = httpLis.Close()
		s.closeAll()
		return nil, err
	}
	tel, err := startTelemetry(runCtx, cfg, s, log)
	if err != nil {
		return fail(err)
	}
	cfg.Lifecycle.Telemetry, cfg.Compatibility.Telemetry, cfg.Renderer.Telemetry, cfg.Precheck.Telemetry = tel, tel, tel, tel

	// The lifecycle service reaches its peers over gRPC on this process's
	// own port, as it would across machines.
	cfg.Lifecycle.CompatibilityAddr = s.GRPCAddr
	cfg.Lifecycle.RendererAddr = s.GRPCAddr
	cfg.Lifecycle.PrecheckAddr = s.GRPCAddr
	cfg.Lifecycle.PeerToken = sec.peerToken
	// Options the caller gave (tests: a peer that stops answering) come
	// after the process's own.
	cfg.Lifecycle.PeerDialOptions = append(append([]grpc.DialOption(nil), sec.dialOpts...), cfg.Lifecycle.PeerDialOptions...)

	services, life, err := s.newServices(runCtx, cfg, log)
	if err != nil {
		return fail(err)
	}
	s.lifecycle = life

	sec.srvCfg.Telemetry = tel
	srv := grpcx.NewServer(sec.srvCfg)
	for _, r := range services {
		r.Register(srv)
	}
	tel.InitializeServerMetrics(srv.Server)
	srv.MarkServing()

	httpSrv, err := s.newGateway(runCtx, cfg, sec, tel)
	if err != nil {
		return fail(err)
	}
	s.serve(runCtx, cancel, srv, grpcLis, httpSrv, httpLis)
	if err := life.Start(runCtx); err != nil {
		cancel()
		s.wg.Wait()
		s.closeAll()
		return nil, err
	}
	// "ready" only once gRPC health and /readyz report the truth.
	waitCtx, waitDone := context.WithTimeout(runCtx, 30*time.Second)
	_ = srv.WaitChecked(waitCtx)
	waitDone()
	log.Info("vcfsm ready", "rest", s.Scheme+"://"+s.HTTPAddr+"/v2", "console", s.Scheme+"://"+s.HTTPAddr+"/ui/", "grpc", s.GRPCAddr, "mtls", cfg.Common.GRPCTLS.Enabled())
	return s, nil
}

// security is what the common flags say about callers and transport: the
// accepted tokens, the token services send each other, and TLS.
type security struct {
	tokens    *auth.Tokens
	peerToken string
	dialOpts  []grpc.DialOption
	srvCfg    grpcx.ServerConfig
}

func prepareSecurity(cfg *Config, log *slog.Logger) (security, error) {
	tokens, peerToken, err := cfg.Common.Auth(cfg.Lifecycle.DataDir, log)
	if err != nil {
		return security{}, err
	}
	if err := acceptOwnToken(tokens, peerToken); err != nil {
		return security{}, err
	}
	if cfg.DevTLS {
		if err := useDevTLS(cfg, log); err != nil {
			return security{}, err
		}
	}
	dialOpts, err := cfg.Common.GRPCTLS.DialOptions()
	if err != nil {
		return security{}, err
	}
	srvCfg, err := cfg.Common.ServerConfig(log, tokens)
	if err != nil {
		return security{}, err
	}
	return security{tokens: tokens, peerToken: peerToken, dialOpts: dialOpts, srvCfg: srvCfg}, nil
}

// ownPrincipal is the principal the all-in-one's own token is accepted as
// when --tokens does not list it.
const ownPrincipal = "vcfsm-internal"

// acceptOwnToken makes the all-in-one accept the token its services send
// each other: they are this process, so a --service-token that --tokens
// does not list is accepted with role service. A token listed with a role
// that may not make those calls is a configuration error that would fail
// every registration: refuse to start, saying what to change.
func acceptOwnToken(tokens *auth.Tokens, own string) error {
	id, ok := tokens.Lookup(own)
	if !ok {
		if err := tokens.AddRole(ownPrincipal, auth.RoleService, own); err != nil {
			return fmt.Errorf("--service-token: %w", err)
		}
		return nil
	}
	if !id.Role.Has(auth.PermInternal) {
		return fmt.Errorf("--service-token is listed in --tokens as principal %q with role %s, which may not make the calls the services make "+
			"to each other: give that entry role service (%s:service:<token>) or admin, or drop it (the all-in-one accepts its own --service-token)",
			id.Principal, id.Role, id.Principal)
	}
	return nil
}

// newGateway builds the REST edge; the gateway is a client of the
// lifecycle service like any other.
func (s *System) newGateway(ctx context.Context, cfg Config, sec security, tel *observability.Telemetry) (*http.Server, error) {
	conn, err := grpcx.Dial(s.GRPCAddr, "", append(append([]grpc.DialOption(nil), sec.dialOpts...), tel.DialOptions()...)...)
	if err != nil {
		return nil, err
	}
	s.closers = append(s.closers, conn)
	handler, err := gateway.New(ctx, conn, gateway.Options{Logger: s.log.With("service", "gateway"), Tokens: sec.tokens, Limits: cfg.Gateway.Limits, Telemetry: tel})
	if err != nil {
		return nil, err
	}
	httpSrv, err := cfg.Gateway.HTTPServer(handler)
	if err != nil {
		return nil, err
	}
	s.Scheme = gateway.Scheme(httpSrv)
	return httpSrv, nil
}

// startTelemetry builds (unless given) the system's telemetry and starts
// its metrics listener; both stop with the system.
func startTelemetry(ctx context.Context, cfg Config, s *System, log *slog.Logger) (*observability.Telemetry, error) {
	tel := cfg.Telemetry
	if tel == nil {
		var err error
		if tel, err = observability.New(ctx, "vcfsm"); err != nil {
			return nil, err
		}
		s.closers = append(s.closers, closerFunc(func() error {
			flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return tel.Shutdown(flushCtx)
		}))
	}
	s.Telemetry = tel
	if cfg.MetricsListen != "" {
		ms, err := tel.ServeMetrics(ctx, cfg.MetricsListen, log)
		if err != nil {
			return nil, err
		}
		s.MetricsAddr = ms.Addr
		s.closers = append(s.closers, closerFunc(ms.Stop))
	}
	return tel, nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// Lifecycle is the running lifecycle service (tests reach the simulated
// targets through it).
func (s *System) Lifecycle() *lifecycle.Service { return s.lifecycle }

// Wait blocks until the system stops (its context ended or a server
// failed), then releases everything.
func (s *System) Wait() error {
	s.wg.Wait()
	s.closeAll()
	s.errMu.Lock()
	defer s.errMu.Unlock()
	return s.err
}

// Stop shuts the system down and waits for it.
func (s *System) Stop() error {
	s.cancel()
	return s.Wait()
}

func (s *System) setErr(err error) {
	if err == nil {
		return
	}
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

// newServices builds the four services in this process (each is closed
// by closeAll).
func (s *System) newServices(ctx context.Context, cfg Config, log *slog.Logger) ([]cli.Registrar, *lifecycle.Service, error) {
	comp, err := compatibility.New(ctx, cfg.Compatibility, log.With("service", "compatibility"))
	if err != nil {
		return nil, nil, err
	}
	s.closers = append(s.closers, comp)
	rend, err := renderer.New(ctx, cfg.Renderer, log.With("service", "renderer"))
	if err != nil {
		return nil, nil, err
	}
	s.closers = append(s.closers, rend)
	pre, err := precheck.New(ctx, cfg.Precheck, log.With("service", "precheck"))
	if err != nil {
		return nil, nil, err
	}
	s.closers = append(s.closers, pre)
	life, err := lifecycle.New(ctx, cfg.Lifecycle, log.With("service", "lifecycle"))
	if err != nil {
		return nil, nil, err
	}
	s.closers = append(s.closers, life)
	return []cli.Registrar{comp, rend, pre, life}, life, nil
}

// serve runs the gRPC and HTTP servers until ctx ends; s.wg counts them.
func (s *System) serve(ctx context.Context, cancel context.CancelFunc, srv *grpcx.Server, grpcLis net.Listener, httpSrv *http.Server, httpLis net.Listener) {
	s.wg.Add(3)
	go func() {
		defer s.wg.Done()
		s.setErr(srv.Serve(ctx, grpcLis, 10*time.Second))
	}()
	go func() {
		defer s.wg.Done()
		if err := gateway.Serve(httpSrv, httpLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.setErr(err)
			cancel()
		}
	}()
	go func() {
		defer s.wg.Done()
		<-ctx.Done()
		shutdownCtx, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		_ = httpSrv.Shutdown(shutdownCtx)
	}()
}

func (s *System) closeAll() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i].Close(); err != nil {
			s.log.Warn("close", "error", err)
		}
	}
	s.closers = nil
}
