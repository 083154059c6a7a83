package vcfsm_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	benchmarkv1 "github.com/vcfsm/vcfsm/gen/vcfservices/benchmark/v1"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

type echoServer struct {
	benchmarkv1.UnimplementedEchoServiceServer
}

func (echoServer) Echo(_ context.Context, req *benchmarkv1.EchoRequest) (*benchmarkv1.EchoResponse, error) {
	return &benchmarkv1.EchoResponse{Id: req.GetId(), Payload: "echo"}, nil
}

// startEcho runs the baseline: a bare gRPC server and a default
// grpc-gateway mux registered against a client connection to it.
func startEcho(tb testing.TB) string {
	tb.Helper()
	srv := grpc.NewServer()
	benchmarkv1.RegisterEchoServiceServer(srv, echoServer{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	go func() { _ = srv.Serve(lis) }()
	tb.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = conn.Close() })
	mux := runtime.NewServeMux()
	require.NoError(tb, benchmarkv1.RegisterEchoServiceHandler(context.Background(), mux, conn))
	hs := httptest.NewServer(mux)
	tb.Cleanup(hs.Close)
	return hs.URL
}

// load runs GETs from 32 concurrent clients.
func load(b *testing.B, url, token string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}, Timeout: 10 * time.Second}
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// The REST goal: GET /v2/vcf-services/{id} through the gateway reaches at
// least half the requests/s of a bare grpc-gateway echo service, measured
// side by side in one run.
func BenchmarkRESTGet(b *testing.B) {
	b.Run("bare-grpc-gateway-echo", func(b *testing.B) {
		url := startEcho(b)
		load(b, url+"/bench/echo/urn:vcloud:entity:broadcom:vcfService:x", "")
	})
	b.Run("gateway-get-service", func(b *testing.B) {
		w := newWorld(b)
		id := w.installed(b, w.publish(b, v1))
		load(b, w.box.URL+"/v2/vcf-services/"+id, onebox.Token)
	})
}
