package grpcx

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/vcfsm/vcfsm/platform/logging"
)

// panicService has a unary method and a stream that panic.
var panicService = grpc.ServiceDesc{
	ServiceName: "test.Panic",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Boom", Handler: func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
		req := &emptypb.Empty{}
		if err := dec(req); err != nil {
			return nil, err
		}
		h := func(context.Context, any) (any, error) { panic("boom") }
		if in == nil {
			return h(ctx, req)
		}
		return in(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: "/test.Panic/Boom"}, h)
	}}},
	Streams: []grpc.StreamDesc{{StreamName: "Stream", ServerStreams: true, Handler: func(any, grpc.ServerStream) error {
		panic("stream boom")
	}}},
}

func serve(t *testing.T, cfg ServerConfig, register func(*Server)) *grpc.ClientConn {
	t.Helper()
	srv := NewServer(cfg)
	if register != nil {
		register(srv)
	}
	srv.MarkServing()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, time.Second) }()
	conn, err := Dial(lis.Addr().String(), "")
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		require.NoError(t, <-done)
	})
	return conn
}

func TestPanicsInHandlersAreContained(t *testing.T) {
	conn := serve(t, ServerConfig{Logger: logging.Discard()}, func(s *Server) { s.RegisterService(&panicService, struct{}{}) })
	err := conn.Invoke(context.Background(), "/test.Panic/Boom", &emptypb.Empty{}, &emptypb.Empty{})
	require.Equal(t, codes.Internal, status.Code(err))
	require.ErrorContains(t, err, "panic in /test.Panic/Boom: boom")

	stream, err := conn.NewStream(context.Background(), &panicService.Streams[0], "/test.Panic/Stream")
	require.NoError(t, err)
	require.NoError(t, stream.SendMsg(&emptypb.Empty{}))
	require.NoError(t, stream.CloseSend())
	err = stream.RecvMsg(&emptypb.Empty{})
	require.Equal(t, codes.Internal, status.Code(err))
	require.ErrorContains(t, err, "panic in /test.Panic/Stream: stream boom")

	res, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err, "the server keeps serving")
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, res.GetStatus())
}

// One connection may hold at most MaxConcurrentStreams calls: with one
// stream open, a further call waits for a slot.
func TestMaxConcurrentStreams(t *testing.T) {
	conn := serve(t, ServerConfig{Logger: logging.Discard(), Limits: Limits{MaxConcurrentStreams: 1}}, nil)
	health := healthpb.NewHealthClient(conn)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watch, err := health.Watch(watchCtx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = watch.Recv()
	require.NoError(t, err, "the stream holds the only slot")

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = health.Check(ctx, &healthpb.HealthCheckRequest{})
	require.Equal(t, codes.DeadlineExceeded, status.Code(err), "no second call while the slot is held")

	stopWatch()
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "the slot is free again")
}
