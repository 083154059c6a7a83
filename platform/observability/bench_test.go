package observability_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc"

	"github.com/vcfsm/vcfsm/platform/observability"
)

// The per-request cost of the middleware alone, with tracing off (the
// default) and access logs written as text to io.Discard, next to a bare
// handler. docs/benchmarks.md puts it beside BenchmarkRESTGet.
func BenchmarkHTTPMiddleware(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		observability.SetRoute(r.Context(), "/v2/vcf-services/{id}")
		w.WriteHeader(http.StatusOK)
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", ok},
		{"observed", observability.WithTracer(nil).HTTPHandler(ok, log)},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/v2/vcf-services/x", nil)
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}

// The server interceptors (metrics, access log, principal) around a unary
// handler, with tracing off.
func BenchmarkGRPCServerInterceptors(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	chain := observability.WithTracer(nil).ServerInterceptors(log)
	interceptors := append(append([]grpc.UnaryServerInterceptor{}, chain.OuterUnary...), chain.InnerUnary...)
	info := &grpc.UnaryServerInfo{FullMethod: "/vcfservices.lifecycle.v1.LifecycleService/GetService"}
	handler := func(context.Context, any) (any, error) { return nil, nil }
	call := func(ctx context.Context) {
		h := handler
		for i := len(interceptors) - 1; i >= 0; i-- {
			next, ic := h, interceptors[i]
			h = func(ctx context.Context, req any) (any, error) { return ic(ctx, req, info, next) }
		}
		_, _ = h(ctx, nil)
	}
	b.ReportAllocs()
	for b.Loop() {
		call(context.Background())
	}
}
