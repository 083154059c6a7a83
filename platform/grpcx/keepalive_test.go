package grpcx

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"

	"github.com/vcfsm/vcfsm/platform/logging"
)

// A client that pings faster than KeepaliveMinTime is disconnected with
// GOAWAY ENHANCE_YOUR_CALM ("too_many_pings"): grpc-go's own clients cannot
// ping that fast, so the test speaks HTTP/2 on a raw connection.
func TestKeepaliveEnforcementDisconnectsFastPingers(t *testing.T) {
	fr := rawHTTP2(t, Limits{KeepaliveMinTime: time.Hour})
	for i := range 5 {
		require.NoError(t, fr.WritePing(false, [8]byte{byte(i)}))
	}
	for {
		f, err := fr.ReadFrame()
		require.NoError(t, err, "the server must answer the pings with GOAWAY before closing")
		if ga, ok := f.(*http2.GoAwayFrame); ok {
			require.Equal(t, http2.ErrCodeEnhanceYourCalm, ga.ErrCode)
			require.Equal(t, "too_many_pings", string(ga.DebugData()))
			return
		}
	}
}

// The configured MinTime is the one enforced (grpc-go's own default, 5
// minutes, would refuse these pings too): pings spaced wider than it are
// answered, not punished.
func TestKeepaliveMinTimeIsTheConfiguredOne(t *testing.T) {
	fr := rawHTTP2(t, Limits{KeepaliveMinTime: time.Millisecond})
	acks := 0
	for i := range 4 {
		require.NoError(t, fr.WritePing(false, [8]byte{byte(i)}))
		for acks <= i {
			f, err := fr.ReadFrame()
			require.NoError(t, err)
			switch f := f.(type) {
			case *http2.GoAwayFrame:
				t.Fatalf("GOAWAY %v after %d pings spaced wider than MinTime", f.ErrCode, i+1)
			case *http2.PingFrame:
				if f.IsAck() {
					acks++
				}
			}
		}
		<-time.After(20 * time.Millisecond) // wider than MinTime
	}
	require.Equal(t, 4, acks)
}

// rawHTTP2 serves a Server with limits and returns a framer on a raw
// connection that has sent the client preface and its settings.
func rawHTTP2(t *testing.T, limits Limits) *http2.Framer {
	t.Helper()
	srv := NewServer(ServerConfig{Logger: logging.Discard(), Limits: limits})
	srv.MarkServing()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Server.Serve(lis) }()
	t.Cleanup(srv.Stop)
	conn, err := net.Dial("tcp", lis.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	fr := http2.NewFramer(conn, conn)
	require.NoError(t, fr.WriteSettings())
	return fr
}
