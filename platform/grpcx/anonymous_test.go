package grpcx

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/logging"
	"github.com/vcfsm/vcfsm/platform/observability"
)

const (
	adminToken  = "admin-token-0123456789abcdef"
	viewerToken = "viewer-token-0123456789abcdef"
)

func testTokens(t *testing.T) *auth.Tokens {
	t.Helper()
	tokens, err := auth.ParseTokens("root:" + adminToken + ",audit:viewer:" + viewerToken)
	require.NoError(t, err)
	return tokens
}

// echoService answers its unary method with what it got.
var echoService = grpc.ServiceDesc{
	ServiceName: "test.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Echo", Handler: func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
		req := &emptypb.Empty{}
		if err := dec(req); err != nil {
			return nil, err
		}
		h := func(_ context.Context, req any) (any, error) { return req, nil }
		return in(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/test.Echo/Echo"}, h)
	}}},
}

// A call without a valid token is refused from its headers: a message
// larger than the server's limit, which grpc would refuse as too large
// once it read its length, gets Unauthenticated instead; one whose role
// lacks the method's permission, PermissionDenied. Both are counted.
func TestCallsAreRefusedBeforeTheirMessageIsRead(t *testing.T) {
	tel := observability.Or(nil)
	conn := serve(t, ServerConfig{Logger: logging.Discard(), Tokens: testTokens(t), MaxRecvBytes: 1 << 20, Telemetry: tel},
		func(s *Server) { s.RegisterService(&echoService, struct{}{}) })
	big := &healthpb.HealthCheckRequest{Service: string(make([]byte, 2<<20))}
	invoke := func(token string) error {
		opts := []grpc.CallOption{grpc.MaxCallSendMsgSize(4 << 20)}
		if token != "" {
			opts = append(opts, grpc.PerRPCCredentials(auth.Bearer(token)))
		}
		return conn.Invoke(context.Background(), "/test.Echo/Echo", big, &emptypb.Empty{}, opts...)
	}
	err := invoke("")
	require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	err = invoke("wrong-token-0123456789abcdef")
	require.Equal(t, codes.Unauthenticated, status.Code(err), "%v", err)
	err = invoke(viewerToken)
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	require.ErrorContains(t, err, `permission admin missing: principal "audit" has role viewer`)
	err = invoke(adminToken)
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "an authenticated call's message is read: %v", err)

	require.NoError(t, conn.Invoke(context.Background(), "/test.Echo/Echo", &emptypb.Empty{}, &emptypb.Empty{},
		grpc.PerRPCCredentials(auth.Bearer(adminToken))), "a valid call passes the tap and the interceptors")

	families, err := tel.Registry.Gather()
	require.NoError(t, err)
	refused := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "vcfsm_grpc_refused_calls_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			refused[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{"unauthenticated": 2, "permission_denied": 1, "anonymous_limit": 0}, refused)
}

// Calls without a token (health, reflection) hold a read slot only while
// a request message is being read, and only for AnonymousReadTimeout;
// with every slot taken the next one is refused, while a call with a
// token never waits for a slot.
func TestAnonymousReadsAreBounded(t *testing.T) {
	conn := serve(t, ServerConfig{Logger: logging.Discard(), Tokens: testTokens(t),
		Limits: Limits{MaxAnonymousReads: 1, AnonymousReadTimeout: 500 * time.Millisecond}}, nil)
	health := healthpb.NewHealthClient(conn)
	check := func(opts ...grpc.CallOption) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := health.Check(ctx, &healthpb.HealthCheckRequest{}, opts...)
		return err
	}
	require.NoError(t, check(), "health checks need no token")

	// A health watch reads its one request and streams on without a slot.
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()
	watch, err := health.Watch(watchCtx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = watch.Recv()
	require.NoError(t, err)
	require.NoError(t, check(), "the watch holds no slot")

	// A reflection stream that sends nothing holds the slot while the
	// server waits for its request.
	idle, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(context.Background())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return status.Code(check()) == codes.ResourceExhausted }, 5*time.Second, 10*time.Millisecond)
	err = check()
	require.ErrorContains(t, err, "1 calls without a token are already sending their requests, the limit (--grpc-max-anonymous-reads)")
	require.NoError(t, check(grpc.PerRPCCredentials(auth.Bearer(viewerToken))), "a call with a token needs no slot")

	// Past AnonymousReadTimeout the idle stream is ended and the slot freed.
	_, err = idle.Recv()
	require.Equal(t, codes.Canceled, status.Code(err), "%v", err)
	require.Eventually(t, func() bool { return check() == nil }, 5*time.Second, 10*time.Millisecond)
}
