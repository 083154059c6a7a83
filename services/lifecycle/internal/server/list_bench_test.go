package server

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/manager"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage/storagetest"
)

// restOver10k serves the handler over real gRPC and grpc-gateway with
// 10,000 services in the store.
func restOver10k(tb testing.TB) string {
	tb.Helper()
	ctx := context.Background()
	repo := storagetest.NewRepo(tb)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	states := []string{lifecycle.StateActive, lifecycle.StateInactive, lifecycle.StatePaused}
	statuses := []string{lifecycle.StatusHealthy, lifecycle.StatusBusy, lifecycle.StatusUnhealthy, lifecycle.StatusReady}
	require.NoError(tb, repo.Update(ctx, func(tx lifecycle.Tx) error {
		for i := range 10000 {
			name := fmt.Sprintf("svc%05d.example.com", i)
			if i%10 == 0 {
				name = fmt.Sprintf("arcturus%05d.galaxy.com", i)
			}
			s := &lifecycle.Service{
				ID: fmt.Sprintf("%s%08d-0000-0000-0000-000000000000", lifecycle.IDPrefix, i), Name: name,
				Vendor: []string{"broadcom", "vmware"}[i%2], Version: fmt.Sprintf("1.%d.0", i%12),
				LifecycleState: states[i%3], Status: statuses[i%4], CreatedAt: base.Add(time.Duration(i) * time.Second),
				Labels: map[string]string{"team": []string{"platform", "data"}[i%2]},
			}
			if err := tx.PutService(s); err != nil {
				return err
			}
		}
		return nil
	}))
	m := manager.NewManager(manager.Config{}, repo, nil, lifecycle.Peers{}, nil)
	srv := grpcx.NewServer(grpcx.ServerConfig{})
	lifecyclev1.RegisterLifecycleServiceServer(srv, NewHandler(m))
	srv.RegisterErrors(lifecyclev1.LifecycleService_ServiceDesc.ServiceName, ErrorTable)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	go func() { _ = srv.Server.Serve(lis) }()
	tb.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = conn.Close() })
	mux := runtime.NewServeMux()
	require.NoError(tb, lifecyclev1.RegisterLifecycleServiceHandler(ctx, mux, conn))
	hs := httptest.NewServer(mux)
	tb.Cleanup(hs.Close)
	return hs.URL
}

// List with a FIQL filter over 10,000 services, page of 25, through
// grpc-gateway and gRPC: reports p50 and p99 latency.
func BenchmarkRESTListFilter10k(b *testing.B) {
	url := restOver10k(b) + "/v2/vcf-services?page=3&pageSize=25&sortDesc=name&filter=" +
		"(vendor%3D%3Dbroadcom%3Bstatus%3D%3DHealthy)%2Cname%3D%3D*arcturus*"
	client := &http.Client{Timeout: 10 * time.Second}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
