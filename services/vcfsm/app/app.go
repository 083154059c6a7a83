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

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/grpcx"
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
	DevTLS        bool
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
	tokens, peerToken, err := cfg.Common.Auth(cfg.Lifecycle.DataDir, log)
	if err != nil {
		return nil, err
	}
	if cfg.DevTLS {
		if err := useDevTLS(&cfg, log); err != nil {
			return nil, err
		}
	}
	dialOpts, err := cfg.Common.GRPCTLS.DialOptions()
	if err != nil {
		return nil, err
	}
	srvCfg, err := cfg.Common.ServerConfig(log, tokens)
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
	s := &System{GRPCAddr: grpcLis.Addr().String(), HTTPAddr: httpLis.Addr().String(), Token: peerToken, log: log, cancel: cancel}
	fail := func(err error) (*System, error) {
		cancel()
		_ = grpcLis.Close()
		_ = httpLis.Close()
		s.closeAll()
		return nil, err
	}

	// The lifecycle service reaches its peers over gRPC on this process's
	// own port, as it would across machines.
	cfg.Lifecycle.CompatibilityAddr = s.GRPCAddr
	cfg.Lifecycle.RendererAddr = s.GRPCAddr
	cfg.Lifecycle.PrecheckAddr = s.GRPCAddr
	cfg.Lifecycle.PeerToken = peerToken
	cfg.Lifecycle.PeerDialOptions = dialOpts

	services, life, err := s.newServices(runCtx, cfg, log)
	if err != nil {
		return fail(err)
	}
	s.lifecycle = life

	srv := grpcx.NewServer(srvCfg)
	for _, r := range services {
		r.Register(srv)
	}
	srv.MarkServing()

	// The gateway is a client of the lifecycle service like any other.
	conn, err := grpcx.Dial(s.GRPCAddr, "", dialOpts...)
	if err != nil {
		return fail(err)
	}
	s.closers = append(s.closers, conn)
	handler, err := gateway.New(runCtx, conn, gateway.Options{Logger: log.With("service", "gateway"), Tokens: tokens, Limits: cfg.Gateway.Limits})
	if err != nil {
		return fail(err)
	}
	httpSrv, err := cfg.Gateway.HTTPServer(handler)
	if err != nil {
		return fail(err)
	}
	s.Scheme = gateway.Scheme(httpSrv)

	s.serve(runCtx, cancel, srv, grpcLis, httpSrv, httpLis)
	if err := life.Start(runCtx); err != nil {
		cancel()
		s.wg.Wait()
		s.closeAll()
		return nil, err
	}
	log.Info("vcfsm ready", "rest", s.Scheme+"://"+s.HTTPAddr+"/v2", "grpc", s.GRPCAddr, "mtls", cfg.Common.GRPCTLS.Enabled())
	return s, nil
}

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
