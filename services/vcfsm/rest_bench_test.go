package vcfsm_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
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

// burst runs GETs of url from 32 concurrent clients for d and returns
// how many succeeded.
func burst(tb testing.TB, client *http.Client, url, token string, d time.Duration) int {
	var mu sync.Mutex
	n := 0
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			done := 0
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := client.Do(req)
				if err != nil {
					tb.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					tb.Errorf("status %d", resp.StatusCode)
					return
				}
				done++
			}
			mu.Lock()
			n += done
			mu.Unlock()
		})
	}
	wg.Wait()
	return n
}

// The REST goal: GET /v2/vcf-services/{id} through the gateway against a
// bare grpc-gateway echo service, alternating one second of each per
// round (b.N rounds) in one run so both see the same machine load; it
// reports the gateway's requests/s in percent of the echo's.
func BenchmarkRESTGet(b *testing.B) {
	echo := startEcho(b) + "/bench/echo/urn:vcloud:entity:broadcom:vcfService:x"
	w := newWorld(b)
	id := w.installed(b, w.publish(b, v1))
	get := w.box.URL + "/v2/vcf-services/" + id
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}, Timeout: 10 * time.Second}
	burst(b, client, echo, "", 200*time.Millisecond) // warm both up
	burst(b, client, get, onebox.Token, 200*time.Millisecond)
	var nEcho, nGet int
	var cpuEcho, cpuGet time.Duration
	b.ResetTimer()
	for range b.N {
		c0 := cpuTime(b)
		nEcho += burst(b, client, echo, "", time.Second)
		c1 := cpuTime(b)
		nGet += burst(b, client, get, onebox.Token, time.Second)
		cpuEcho, cpuGet = cpuEcho+c1-c0, cpuGet+cpuTime(b)-c1
	}
	b.StopTimer()
	b.ReportMetric(float64(nEcho)/float64(b.N), "echo-req/s")
	b.ReportMetric(float64(nGet)/float64(b.N), "get-req/s")
	b.ReportMetric(100*float64(nGet)/float64(nEcho), "pct-of-echo")
	// The process's CPU per request (clients included, the same for both):
	// on a loaded machine the throughput ratio swings with the other
	// processes' bursts; the CPU a request costs does not.
	echoUS := float64(cpuEcho.Microseconds()) / float64(nEcho)
	getUS := float64(cpuGet.Microseconds()) / float64(nGet)
	b.ReportMetric(echoUS, "echo-cpu-us/req")
	b.ReportMetric(getUS, "get-cpu-us/req")
	b.ReportMetric(100*echoUS/getUS, "cpu-pct-of-echo")
}
