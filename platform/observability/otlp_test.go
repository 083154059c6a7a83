package observability_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/vcfsm/vcfsm/platform/observability"
)

// receiver is an in-process OTLP/gRPC trace collector.
type receiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans map[string]string // span name -> service.name
}

func (r *receiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans[s.GetName()] = service
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, spans reach an OTLP collector,
// named after the process; without it, tracing is off.
func TestOTLPExportFollowsTheEnvironment(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	require.False(t, observability.TracingEnabled())
	off, err := observability.New(context.Background(), "lifecycle")
	require.NoError(t, err)
	_, span := off.Tracer.Tracer("test").Start(context.Background(), "unrecorded")
	require.False(t, span.IsRecording(), "no endpoint: spans are not even recorded")
	span.End()

	recv := &receiver{spans: map[string]string{}}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, recv)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+lis.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	require.True(t, observability.TracingEnabled())
	tel, err := observability.New(context.Background(), "lifecycle")
	require.NoError(t, err)
	_, span = tel.Tracer.Tracer("test").Start(context.Background(), "exported")
	require.True(t, span.IsRecording())
	span.End()
	require.NoError(t, tel.Shutdown(context.Background()), "shutdown flushes the batch")

	recv.mu.Lock()
	defer recv.mu.Unlock()
	require.Equal(t, map[string]string{"exported": "lifecycle"}, recv.spans)
}
