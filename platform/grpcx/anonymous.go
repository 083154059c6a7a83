package grpcx

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/echo"
	"github.com/vcfsm/vcfsm/platform/observability"
)

// Calls are authenticated from their headers, before grpc reads their
// message (auth.Tokens.Tap): a call without a valid token never gets a
// byte of its message buffered. The exception is the exempt methods
// (health checking, reflection), which callers may use without a token.
// grpc reads a request message whole before any handler runs, checking
// only its declared length against the server-wide limit, so an anonymous
// call could still hold up to that limit (16 MiB) while its client sends
// the message slowly, or never finishes it. The gate bounds that: at most
// MaxAnonymousReads anonymous calls may be reading a request message at
// once, and each must deliver it within AnonymousReadTimeout. A call holds
// its slot only while a message is being read: a health Watch that has
// read its one request streams on without one.

// Refusal reasons counted by vcfsm_grpc_refused_calls_total.
const (
	refusedUnauthenticated = "unauthenticated"
	refusedPermission      = "permission_denied"
	refusedAnonymousLimit  = "anonymous_limit"
)

// gate is the server's tap: tokens first, then the anonymous read slots.
// A refused call never reaches the interceptors: it is counted here and
// logged at debug level only, so callers without a token cannot grow the
// log (the access log has a line for every call that got in).
type gate struct {
	log     *slog.Logger
	tokens  *auth.Tokens
	slots   chan struct{}
	timeout time.Duration
	refused *prometheus.CounterVec
}

func newGate(log *slog.Logger, tokens *auth.Tokens, l Limits, tel *observability.Telemetry) *gate {
	l = l.withDefaults()
	g := &gate{log: log, tokens: tokens, slots: make(chan struct{}, l.MaxAnonymousReads), timeout: l.AnonymousReadTimeout}
	if tel != nil {
		g.refused = tel.NewCounterVec("grpc_refused_calls_total",
			"gRPC calls refused from their headers, before their message was read, by reason (unauthenticated, permission_denied, anonymous_limit).", "reason")
		for _, r := range []string{refusedUnauthenticated, refusedPermission, refusedAnonymousLimit} {
			g.refused.WithLabelValues(r)
		}
	}
	return g
}

func (g *gate) count(ctx context.Context, reason, method string) {
	if g.refused != nil {
		g.refused.WithLabelValues(reason).Inc()
	}
	if g.log.Enabled(ctx, slog.LevelDebug) {
		g.log.LogAttrs(ctx, slog.LevelDebug, "grpc call refused", slog.String("reason", reason), slog.String("method", echo.Cut(method, echo.MaxValue)))
	}
}

// tap is the server's grpc.InTapHandle.
func (g *gate) tap(ctx context.Context, info *tap.Info) (context.Context, error) {
	ctx, err := g.tokens.Tap(ctx, info)
	if err != nil {
		if status.Code(err) == codes.PermissionDenied {
			g.count(ctx, refusedPermission, info.FullMethodName)
		} else {
			g.count(ctx, refusedUnauthenticated, info.FullMethodName)
		}
		return nil, err
	}
	if _, tokened := auth.TappedIdentity(ctx); tokened {
		return ctx, nil
	}
	return g.admit(ctx, info.FullMethodName)
}

// admit gives an anonymous call a read slot for its first message, or
// refuses it when none is free.
func (g *gate) admit(ctx context.Context, method string) (context.Context, error) {
	c := &anonymousCall{gate: g, method: method}
	if !c.take() {
		g.count(ctx, refusedAnonymousLimit, method)
		return nil, status.Errorf(codes.ResourceExhausted,
			"%d calls without a token are already sending their requests, the limit (--grpc-max-anonymous-reads): retry, or send a token", cap(g.slots))
	}
	ctx, c.cancel = context.WithCancel(ctx)
	c.mu.Lock()
	c.timer = time.AfterFunc(g.timeout, c.cancel)
	c.mu.Unlock()
	// The call's end (its stream context is cancelled) gives the slot back.
	context.AfterFunc(ctx, c.done)
	return context.WithValue(ctx, anonymousKey{}, c), nil
}

type anonymousKey struct{}

// anonymousCall is one call without a token; it holds a read slot while
// one of its messages is being read.
type anonymousCall struct {
	gate   *gate
	method string
	cancel context.CancelFunc

	mu    sync.Mutex
	held  bool
	timer *time.Timer
}

func (c *anonymousCall) take() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held {
		return true
	}
	select {
	case c.gate.slots <- struct{}{}:
		c.held = true
		return true
	default:
		return false
	}
}

// read takes a slot for the next message (the first one has it from the
// tap) and arms the deadline the message must arrive within.
func (c *anonymousCall) read(ctx context.Context) error {
	if !c.take() {
		c.gate.count(ctx, refusedAnonymousLimit, c.method)
		return status.Errorf(codes.ResourceExhausted,
			"%d calls without a token are already sending their requests, the limit (--grpc-max-anonymous-reads): retry, or send a token", cap(c.gate.slots))
	}
	c.mu.Lock()
	if c.timer == nil {
		c.timer = time.AfterFunc(c.gate.timeout, c.cancel)
	}
	c.mu.Unlock()
	return nil
}

// done gives the slot back and stops the deadline: the message was read,
// or the call ended.
func (c *anonymousCall) done() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.held {
		c.held = false
		<-c.gate.slots
	}
}

func anonymousFrom(ctx context.Context) *anonymousCall {
	c, _ := ctx.Value(anonymousKey{}).(*anonymousCall)
	return c
}

// anonymousUnary runs first in the chain: grpc has read the request of a
// unary call before any interceptor runs, so its slot is given back.
func anonymousUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if c := anonymousFrom(ctx); c != nil {
		c.done()
	}
	return handler(ctx, req)
}

// anonymousStream reads every message of an anonymous stream under a slot
// and the deadline.
func anonymousStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	c := anonymousFrom(ss.Context())
	if c == nil {
		return handler(srv, ss)
	}
	return handler(srv, &anonymousServerStream{ServerStream: ss, call: c})
}

type anonymousServerStream struct {
	grpc.ServerStream
	call *anonymousCall
}

func (s *anonymousServerStream) RecvMsg(m any) error {
	if err := s.call.read(s.Context()); err != nil {
		return err
	}
	defer s.call.done()
	return s.ServerStream.RecvMsg(m) // unwrapped: handlers compare it with io.EOF
}
