package grpcx_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/logging"
	"github.com/vcfsm/vcfsm/platform/observability"
)

const token = "alice-token-0123456789abcdef"

type testService struct {
	testpb.UnimplementedTestServiceServer
}

func (testService) EmptyCall(context.Context, *testpb.Empty) (*testpb.Empty, error) {
	return &testpb.Empty{}, nil
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		out = append(out, m)
	}
	return out
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type served struct {
	addr string
	srv  *grpcx.Server
}

func serve(t *testing.T, cfg grpcx.ServerConfig, register func(*grpcx.Server)) served {
	t.Helper()
	srv := grpcx.NewServer(cfg)
	register(srv)
	srv.MarkServing()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, time.Second) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return served{addr: lis.Addr().String(), srv: srv}
}

// Every call gets one access-log line with method, code, duration,
// principal, request id and trace id, never the token; the call is counted.
func TestAccessLogMetricsAndTraceIDs(t *testing.T) {
	var sink syncBuffer
	log, err := logging.New(&sink, "json", "info")
	require.NoError(t, err)
	rec := tracetest.NewSpanRecorder()
	tel := observability.WithTracer(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	tokens, err := auth.NewTokens(map[string]string{"alice": token})
	require.NoError(t, err)
	s := serve(t, grpcx.ServerConfig{Logger: log, Tokens: tokens, Telemetry: tel}, func(srv *grpcx.Server) {
		testpb.RegisterTestServiceServer(srv, testService{})
	})

	authed, err := grpcx.Dial(s.addr, token, tel.DialOptions()...)
	require.NoError(t, err)
	defer func() { _ = authed.Close() }()
	ctx := observability.WithRequestID(context.Background(), "req-42")
	_, err = testpb.NewTestServiceClient(authed).EmptyCall(ctx, &testpb.Empty{})
	require.NoError(t, err)

	anon, err := grpcx.Dial(s.addr, "", tel.DialOptions()...)
	require.NoError(t, err)
	defer func() { _ = anon.Close() }()
	_, err = testpb.NewTestServiceClient(anon).EmptyCall(context.Background(), &testpb.Empty{})
	require.Equal(t, codes.Unauthenticated, status.Code(err))
	_, err = healthpb.NewHealthClient(anon).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)

	var calls []map[string]any
	for _, l := range sink.lines(t) {
		if l["msg"] == "grpc call" {
			calls = append(calls, l)
		}
	}
	// A call refused from its headers (auth.Tokens.Tap) never reaches the
	// interceptors: it is counted apart and logged at debug level only, so
	// callers without a token cannot grow the log.
	require.Len(t, calls, 1, "one line per call; health checks log at debug: %s", sink.String())
	ok := calls[0]
	require.Equal(t, "/grpc.testing.TestService/EmptyCall", ok["method"])
	require.Equal(t, "OK", ok["code"])
	require.Equal(t, "alice", ok["principal"])
	require.Equal(t, "req-42", ok["request_id"])
	require.NotEmpty(t, ok["duration"])
	require.Regexp(t, `^[0-9a-f]{32}$`, ok["trace_id"])
	require.NotContains(t, sink.String(), token)

	// The server span continues the client's trace.
	var client, server sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "grpc.testing.TestService/EmptyCall" && sp.SpanKind().String() == "client" && client == nil {
			client = sp
		}
		if sp.Name() == "grpc.testing.TestService/EmptyCall" && sp.SpanKind().String() == "server" && server == nil {
			server = sp
		}
	}
	require.NotNil(t, client)
	require.NotNil(t, server)
	require.Equal(t, client.SpanContext().TraceID(), server.SpanContext().TraceID())
	require.Equal(t, client.SpanContext().TraceID().String(), ok["trace_id"])

	// Counted on both ends, by code.
	handled := `grpc_server_handled_total{grpc_code="%s",grpc_method="EmptyCall",grpc_service="grpc.testing.TestService",grpc_type="unary"} 1`
	require.NoError(t, testutil.GatherAndCompare(tel.Registry, strings.NewReader(
		"# HELP grpc_server_handled_total Total number of RPCs completed on the server, regardless of success or failure.\n"+
			"# TYPE grpc_server_handled_total counter\n"+
			`grpc_server_handled_total{grpc_code="OK",grpc_method="Check",grpc_service="grpc.health.v1.Health",grpc_type="unary"} 1`+"\n"+
			strings.ReplaceAll(handled, "%s", "OK")+"\n"),
		"grpc_server_handled_total"))
	require.NoError(t, testutil.GatherAndCompare(tel.Registry, strings.NewReader(
		"# HELP vcfsm_grpc_refused_calls_total gRPC calls refused from their headers, before their message was read, by reason (unauthenticated, permission_denied, anonymous_limit).\n"+
			"# TYPE vcfsm_grpc_refused_calls_total counter\n"+
			`vcfsm_grpc_refused_calls_total{reason="anonymous_limit"} 0`+"\n"+
			`vcfsm_grpc_refused_calls_total{reason="permission_denied"} 0`+"\n"+
			`vcfsm_grpc_refused_calls_total{reason="unauthenticated"} 1`+"\n"),
		"vcfsm_grpc_refused_calls_total"))
}
