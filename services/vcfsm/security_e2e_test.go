package vcfsm_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// jsonStream is a JSON body {"source":"aaaa…"} of n bytes produced on the
// fly, so the client holds none of it; sent counts what left the client.
type jsonStream struct {
	n, off int64
	sent   atomic.Int64
}

func (s *jsonStream) Read(p []byte) (int, error) {
	const head, tail = `{"source":"`, `"}`
	if s.off >= s.n {
		return 0, io.EOF
	}
	i := 0
	for ; i < len(p) && s.off < s.n; i++ {
		switch {
		case s.off < int64(len(head)):
			p[i] = head[s.off]
		case s.off >= s.n-int64(len(tail)):
			p[i] = tail[s.off-(s.n-int64(len(tail)))]
		default:
			p[i] = 'a'
		}
		s.off++
	}
	s.sent.Add(int64(i))
	return i, nil
}

func sendHuge(t *testing.T, box *onebox.Box, method, path, token string, declareLength bool) (int, string, int64) {
	t.Helper()
	body := &jsonStream{n: 100 << 20}
	req, err := http.NewRequest(method, box.URL+path, io.NopCloser(body))
	require.NoError(t, err)
	if declareLength {
		req.ContentLength = body.n
	} else {
		req.ContentLength = -1
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := box.Client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw), body.sent.Load()
}

// A 100 MiB unauthenticated POST and a 100 MiB authenticated PATCH are
// refused without the process reading them: its allocations grow by far
// less than the bodies.
func TestHugeBodiesRefusedBeforeReading(t *testing.T) {
	box := onebox.Start(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	code, body, sent := sendHuge(t, box, http.MethodPost, "/v2/vcf-services", "", true)
	require.Equal(t, http.StatusUnauthorized, code, body)
	require.Less(t, sent, int64(32<<20), "the server stopped the upload early")

	code, body, sent = sendHuge(t, box, http.MethodPatch, "/v2/vcf-services/x", onebox.Token, false)
	require.Equal(t, http.StatusRequestEntityTooLarge, code, body)
	require.Contains(t, body, "request body exceeds the limit of 4194304 bytes (--http-max-body-bytes)")
	require.Less(t, sent, int64(32<<20))

	code, body, _ = sendHuge(t, box, http.MethodPatch, "/v2/vcf-services/x", onebox.Token, true)
	require.Equal(t, http.StatusRequestEntityTooLarge, code, body)

	runtime.ReadMemStats(&after)
	grew := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated %d KiB while refusing 300 MiB of bodies", grew>>10)
	require.Less(t, grew, uint64(32<<20), "the process allocated less than 32 MiB in all")
}

func nestedFilter(depth int) string {
	return strings.Repeat("(", depth) + "status==Healthy" + strings.Repeat(")", depth)
}

func TestFilterBounds(t *testing.T) {
	box := onebox.Start(t)
	resp := box.Do(t, http.MethodGet, "/v2/vcf-services?filter="+nestedFilter(40), nil)
	require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), "filter: invalid FIQL filter")
	require.Contains(t, string(resp.Body), "parentheses nested deeper than 32")

	conn, err := grpc.NewClient(box.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(bearer(onebox.Token)))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	client := lifecyclev1.NewLifecycleServiceClient(conn)
	huge := strings.Repeat("(", 4<<20)
	_, err = client.ListServices(context.Background(), &lifecyclev1.ListServicesRequest{Filter: huge})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "filter: invalid FIQL filter: 4194304 bytes long, more than the limit of 4096")

	// The process survived and still serves.
	_, err = client.ListServices(context.Background(), &lifecyclev1.ListServicesRequest{})
	require.NoError(t, err)
	h, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, h.GetStatus())
}

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearer) RequireTransportSecurity() bool { return false }

// --dev-tls: HTTPS at the edge, mTLS between services, certificates in
// the data directory; plain gRPC and clients without a certificate are
// refused.
func TestDevTLS(t *testing.T) {
	box := onebox.Start(t, func(c *app.Config) { c.DevTLS = true })
	require.True(t, strings.HasPrefix(box.URL, "https://"), box.URL)
	resp := box.Do(t, http.MethodGet, "/v2/vcf-services", nil)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	for _, f := range []string{"ca.crt", "tls.crt", "tls.key"} {
		require.FileExists(t, filepath.Join(box.DataDir, "tls", f))
	}
	info, err := os.Stat(filepath.Join(box.DataDir, "tls", "tls.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	raw, err := os.ReadFile(filepath.Join(box.DataDir, "tls", "ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(raw))
	call := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient(box.GRPCAddr, grpc.WithTransportCredentials(creds), grpc.WithPerRPCCredentials(bearer(onebox.Token)))
		require.NoError(t, err)
		defer func() { _ = conn.Close() }()
		_, err = lifecyclev1.NewLifecycleServiceClient(conn).ListServices(context.Background(), &lifecyclev1.ListServicesRequest{})
		return err
	}
	require.Error(t, call(insecure.NewCredentials()), "plain gRPC is refused")
	require.Error(t, call(credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13})), "a client without a certificate is refused")
	cert, err := tls.LoadX509KeyPair(filepath.Join(box.DataDir, "tls", "tls.crt"), filepath.Join(box.DataDir, "tls", "tls.key"))
	require.NoError(t, err)
	require.NoError(t, call(credentials.NewTLS(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13})))
}

var _ = auth.RoleAdmin
