package app

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/logging"
)

// A client that stalls while sending its body is cut off at the read
// timeout instead of holding the connection.
func TestReadTimeoutCutsSlowBodies(t *testing.T) {
	readErr := make(chan error, 1)
	next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		readErr <- err
	})
	cfg := Config{Limits: Limits{ReadTimeout: 300 * time.Millisecond}}
	srv, err := cfg.HTTPServer(newGuard(next, testTokens(t), Limits{}, logging.Discard()))
	require.NoError(t, err)
	require.Equal(t, 300*time.Millisecond, srv.ReadTimeout)
	require.Equal(t, DefaultWriteTimeout, srv.WriteTimeout)
	require.Equal(t, DefaultIdleTimeout, srv.IdleTimeout)
	require.Equal(t, DefaultMaxHeaderBytes, srv.MaxHeaderBytes)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = Serve(srv, lis) }()
	t.Cleanup(func() { _ = srv.Close() })

	conn, err := net.Dial("tcp", lis.Addr().String())
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = io.WriteString(conn, "POST /v2/vcf-services HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+adminToken+"\r\nContent-Length: 100\r\n\r\n{\"sou")
	require.NoError(t, err)
	select {
	case err := <-readErr:
		require.Error(t, err, "the stalled body read fails at the timeout")
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled body held the connection past the read timeout")
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(conn)
	require.NoError(t, err, "the server closed the connection (EOF, not our deadline)")
}

func TestHTTPServerTLS(t *testing.T) {
	files, _, err := cli.EnsureDevTLS(filepath.Join(t.TempDir(), "tls"))
	require.NoError(t, err)
	srv, err := Config{TLSCert: files.Cert, TLSKey: files.Key}.HTTPServer(http.NotFoundHandler())
	require.NoError(t, err)
	require.Equal(t, "https", Scheme(srv))
	_, err = Config{TLSCert: files.Cert}.HTTPServer(http.NotFoundHandler())
	require.EqualError(t, err, "--tls-cert and --tls-key go together")
	_, err = Config{TLSCert: files.CA, TLSKey: files.Key}.HTTPServer(http.NotFoundHandler())
	require.ErrorContains(t, err, "--tls-cert/--tls-key")
}
