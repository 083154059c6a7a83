// Package grpcx builds the gRPC servers and client connections every service
// uses: recovery, bearer-token auth, the service's error table, health
// checking and reflection (so grpcurl works).
package grpcx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/grpcerr"
	"github.com/vcfsm/vcfsm/platform/observability"
)

// ServerConfig configures NewServer.
type ServerConfig struct {
	Logger *slog.Logger
	// Tokens authenticate callers; nil disables authentication (tests only).
	Tokens *auth.Tokens
	// MaxRecvBytes bounds request size; 0 means 16 MiB.
	MaxRecvBytes int
	// Creds secures the listener (mTLS between services); nil serves
	// plain gRPC (loopback, the all-in-one default).
	Creds credentials.TransportCredentials
	// Limits bound streams and keepalive pings; zero fields take the
	// defaults.
	Limits Limits
	// Telemetry adds metrics, tracing and the access log; nil: none.
	Telemetry *observability.Telemetry
	// ReadinessInterval is how often readiness checks run; 0 means 2s.
	ReadinessInterval time.Duration
}

// Limits bound what one client connection may hold.
type Limits struct {
	// MaxConcurrentStreams bounds the calls in flight per connection
	// (default 4096).
	MaxConcurrentStreams uint32
	// KeepaliveMinTime is the shortest ping interval a client may use;
	// faster pingers are disconnected (default 10s).
	KeepaliveMinTime time.Duration
	// MaxConnectionIdle closes connections idle this long (default 15m).
	MaxConnectionIdle time.Duration
	// MaxHeaderListBytes bounds a call's headers, which are read before
	// the call is authenticated (default 64 KiB; grpc's own is 16 MiB).
	MaxHeaderListBytes uint32
	// MaxAnonymousReads bounds the calls without a token (health checks,
	// reflection) reading a request message at once (default 2; see
	// anonymous.go).
	MaxAnonymousReads int
	// AnonymousReadTimeout is how long a call without a token has to send
	// each request message; past it the call ends (default 10s).
	AnonymousReadTimeout time.Duration
}

// Defaults of Limits.
const (
	// DefaultMaxConcurrentStreams: the REST gateway carries every watch
	// stream on its one connection to lifecycle, so this bounds the
	// watchers one gateway serves; 4096 serves a thousand watchers of one
	// service out of the box (each principal stays capped by
	// --max-watches). A stream costs a few KiB while it is open.
	DefaultMaxConcurrentStreams = 4096
	DefaultKeepaliveMinTime     = 10 * time.Second
	DefaultMaxConnectionIdle    = 15 * time.Minute
	DefaultMaxHeaderListBytes   = 64 << 10
	// DefaultMaxAnonymousReads: a health check or a reflection request
	// is read in microseconds, so two at once serve probes; a caller
	// flooding them without a token holds at most two messages (32 MiB at
	// the 16 MiB message limit) for at most DefaultAnonymousReadTimeout.
	DefaultMaxAnonymousReads    = 2
	DefaultAnonymousReadTimeout = 10 * time.Second
)

func (l Limits) withDefaults() Limits {
	if l.MaxConcurrentStreams == 0 {
		l.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if l.KeepaliveMinTime == 0 {
		l.KeepaliveMinTime = DefaultKeepaliveMinTime
	}
	if l.MaxConnectionIdle == 0 {
		l.MaxConnectionIdle = DefaultMaxConnectionIdle
	}
	if l.MaxHeaderListBytes == 0 {
		l.MaxHeaderListBytes = DefaultMaxHeaderListBytes
	}
	if l.MaxAnonymousReads == 0 {
		l.MaxAnonymousReads = DefaultMaxAnonymousReads
	}
	if l.AnonymousReadTimeout == 0 {
		l.AnonymousReadTimeout = DefaultAnonymousReadTimeout
	}
	return l
}

func (l Limits) serverOptions() []grpc.ServerOption {
	l = l.withDefaults()
	return []grpc.ServerOption{
		grpc.MaxConcurrentStreams(l.MaxConcurrentStreams),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: l.KeepaliveMinTime, PermitWithoutStream: true}),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: l.MaxConnectionIdle, Time: time.Minute, Timeout: 20 * time.Second}),
		grpc.MaxHeaderListSize(l.MaxHeaderListBytes),
		// Calls run on a few long-lived goroutines instead of one new
		// goroutine each: a new goroutine grows its stack through the
		// interceptor chain and protobuf on every call (≈ 8 µs of a GET's
		// CPU in BenchmarkRESTGet's profile); a worker's stack stays
		// grown. When every worker is busy (long watch streams), grpc
		// starts a goroutine for the call as before.
		grpc.NumStreamWorkers(uint32(max(streamWorkers, 8*runtime.GOMAXPROCS(0)))),
	}
}

// streamWorkers sizes the server's call workers by concurrent calls, not
// cores: calls wait on the network and the store, and a REST gateway
// forwards its clients' requests concurrently over one connection. An idle
// worker is a parked goroutine.
const streamWorkers = 64

// Server is a gRPC server with health checking. Several services may share
// one Server (the all-in-one); each registers its own error table.
type Server struct {
	*grpc.Server
	Health *health.Server
	log    *slog.Logger
	errs   *errorTables
	ready  *readiness
}

// RegisterErrors sets the error table for a gRPC service (its full name,
// e.g. "vcfservices.lifecycle.v1.LifecycleService"). Call before serving.
func (s *Server) RegisterErrors(service string, table grpcerr.Table) {
	s.errs.tables[service] = table
}

// InterceptUnary runs i around every unary call of service (its full
// name), inside the service's error table, so the errors i returns are
// mapped like the handler's. Call before serving.
func (s *Server) InterceptUnary(service string, i grpc.UnaryServerInterceptor) {
	s.errs.unaries[service] = i
}

type errorTables struct {
	tables  map[string]grpcerr.Table
	unaries map[string]grpc.UnaryServerInterceptor
}

func serviceOf(fullMethod string) string {
	// fullMethod is "/package.Service/Method".
	name := strings.TrimPrefix(fullMethod, "/")
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[:i]
	}
	return name
}

// unary maps every unary call's error through its service's table, with
// the service's own interceptor (if any) inside it. It is one function for
// every call, so a call allocates no interceptor of its own.
func (e *errorTables) unary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		service := serviceOf(info.FullMethod)
		var resp any
		var err error
		if i := e.unaries[service]; i != nil {
			resp, err = i(ctx, req, info, handler)
		} else {
			resp, err = handler(ctx, req)
		}
		if err != nil {
			return resp, e.tables[service].ServerError(ctx, log, info.FullMethod, err)
		}
		return resp, nil
	}
}

func (e *errorTables) stream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := handler(srv, ss); err != nil {
			return e.tables[serviceOf(info.FullMethod)].ServerError(ss.Context(), log, info.FullMethod, err)
		}
		return nil
	}
}

// NewServer returns a server with the standard interceptor chain. Register
// services on it, then call MarkServing.
func NewServer(cfg ServerConfig) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	maxRecv := cfg.MaxRecvBytes
	if maxRecv == 0 {
		maxRecv = 16 << 20
	}
	unary := []grpc.UnaryServerInterceptor{recoverUnary(log)}
	stream := []grpc.StreamServerInterceptor{recoverStream(log)}
	var opts []grpc.ServerOption
	if cfg.Tokens != nil {
		// Calls are authenticated from their headers before their message
		// is read (anonymous.go).
		opts = append(opts, grpc.InTapHandle(newGate(log, cfg.Tokens, cfg.Limits, cfg.Telemetry).tap))
		unary = append([]grpc.UnaryServerInterceptor{anonymousUnary}, unary...)
		stream = append([]grpc.StreamServerInterceptor{anonymousStream}, stream...)
	}
	var tel observability.ServerChain
	if cfg.Telemetry != nil {
		tel = cfg.Telemetry.ServerInterceptors(log)
		opts = append(opts, cfg.Telemetry.ServerOptions()...)
	}
	unary = append(unary, tel.OuterUnary...)
	stream = append(stream, tel.OuterStream...)
	if cfg.Tokens != nil {
		unary = append(unary, cfg.Tokens.UnaryServerInterceptor())
		stream = append(stream, cfg.Tokens.StreamServerInterceptor())
	}
	unary = append(unary, tel.InnerUnary...)
	stream = append(stream, tel.InnerStream...)
	errs := &errorTables{tables: map[string]grpcerr.Table{}, unaries: map[string]grpc.UnaryServerInterceptor{}}
	unary = append(unary, errs.unary(log))
	stream = append(stream, errs.stream(log))
	opts = append(opts,
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
		grpc.MaxRecvMsgSize(maxRecv),
		grpc.ForceServerCodecV2(newEncodedCodec()),
	)
	opts = append(opts, cfg.Limits.serverOptions()...)
	if cfg.Creds != nil {
		opts = append(opts, grpc.Creds(cfg.Creds))
	}
	s := grpc.NewServer(opts...)
	h := health.NewServer()
	healthpb.RegisterHealthServer(s, h)
	reflection.Register(s)
	return &Server{Server: s, Health: h, log: log, errs: errs, ready: newReadiness(h, log, cfg.ReadinessInterval)}
}

// MarkServing reports every registered service, and the server as a whole,
// as SERVING to health checks, except services with a readiness check:
// those are NOT_SERVING until their first check passes (Serve runs them).
func (s *Server) MarkServing() {
	s.ready.markServing(s.GetServiceInfo())
}

// Serve serves on lis until ctx ends, then drains in-flight calls for up to
// grace before closing them.
func (s *Server) Serve(ctx context.Context, lis net.Listener, grace time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- s.Server.Serve(lis) }()
	stopChecks := s.ready.run(ctx)
	defer stopChecks()
	select {
	case err := <-errc:
		if errors.Is(err, grpc.ErrServerStopped) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	s.Health.Shutdown()
	done := make(chan struct{})
	go func() {
		s.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		s.Stop()
		<-done
	}
	<-errc //nolint:errcheck // only waits for Serve to return: after (Graceful)Stop its result is nil and the shutdown has succeeded
	return nil
}

func recoverUnary(log *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if r := recover(); r != nil {
				log.ErrorContext(ctx, "panic in handler", "method", info.FullMethod, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = status.Errorf(codes.Internal, "internal error: panic in %s: %v; the server log has the stack", info.FullMethod, r)
			}
		}()
		return handler(ctx, req)
	}
}

func recoverStream(log *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		defer func() {
			if r := recover(); r != nil {
				log.ErrorContext(ss.Context(), "panic in stream handler", "method", info.FullMethod, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = status.Errorf(codes.Internal, "internal error: panic in %s: %v; the server log has the stack", info.FullMethod, r)
			}
		}()
		return handler(srv, ss)
	}
}

// Dial connects to another service, sending token on every call. Without a
// grpc.WithTransportCredentials among opts the connection is plain.
func Dial(addr, token string, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
	base := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64 << 20)),
		// Within the server's keepalive enforcement (10s minimum).
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: time.Minute, Timeout: 20 * time.Second}),
	}
	if token != "" {
		base = append(base, grpc.WithPerRPCCredentials(auth.Bearer(token)))
	}
	conn, err := grpc.NewClient(addr, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	return conn, nil
}

// Listen opens a TCP listener, naming the address in errors.
func Listen(addr string) (net.Listener, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return lis, nil
}

// HTTPCodeHeader is the gRPC response header a handler sets to choose the
// REST status the gateway answers with (api.md answers PUT, PATCH and DELETE
// with 202).
const HTTPCodeHeader = "x-http-code"

// Read-your-writes across replicas: a lifecycle answer carries the store
// revision it reflects in RevisionHeader; a call that sends one back in
// MinRevisionHeader is answered only once the replica's view has reached
// it. The gateway maps both to the REST headers X-Vcfsm-Revision and
// X-Vcfsm-Min-Revision.
const (
	RevisionHeader    = "x-vcfsm-revision"
	MinRevisionHeader = "x-vcfsm-min-revision"
)

// SetHTTPCode asks the gateway to answer this call with code.
func SetHTTPCode(ctx context.Context, code int) {
	_ = grpc.SetHeader(ctx, metadata.Pairs(HTTPCodeHeader, strconv.Itoa(code)))
}
