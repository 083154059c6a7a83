package vcfsm_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Attacker speaks raw HTTP/2 to a gRPC server the way a hostile client
// would: it opens streams and sends each one a gRPC message header
// declaring a large message, then most of that message, and never the
// end of it, so a server that reads request messages before checking the
// caller holds them for as long as the connection stays open. It honours
// flow control and holds only one 16 KiB chunk itself, so the memory the
// test process gains is the server's.
type h2Attacker struct {
	t    *testing.T
	conn net.Conn
	fr   *http2.Framer
	wmu  sync.Mutex // guards writes to fr
	enc  *hpack.Encoder
	hbuf bytes.Buffer

	mu         sync.Mutex
	cond       *sync.Cond
	connWindow int64
	initial    int64
	windows    map[uint32]int64
	// statuses are the grpc-status each ended stream got ("reset" for an
	// RST_STREAM without one).
	statuses map[uint32]string
	sent     map[uint32]int64
	dead     bool
}

func newH2Attacker(t *testing.T, addr string) *h2Attacker {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	a := &h2Attacker{t: t, conn: conn, fr: http2.NewFramer(conn, conn), connWindow: 65535, initial: 65535,
		windows: map[uint32]int64{}, statuses: map[uint32]string{}, sent: map[uint32]int64{}}
	a.cond = sync.NewCond(&a.mu)
	a.enc = hpack.NewEncoder(&a.hbuf)
	a.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	_, err = conn.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	require.NoError(t, a.fr.WriteSettings())
	go a.read()
	t.Cleanup(a.close)
	return a
}

func (a *h2Attacker) close() {
	_ = a.conn.Close()
	a.mu.Lock()
	a.dead = true
	a.cond.Broadcast()
	a.mu.Unlock()
}

// read follows the server: settings, window updates, pings, the streams it
// ends.
func (a *h2Attacker) read() {
	defer a.close()
	for {
		f, err := a.fr.ReadFrame()
		if err != nil {
			return
		}
		a.mu.Lock()
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
					for id := range a.windows {
						a.windows[id] += int64(v) - a.initial
					}
					a.initial = int64(v)
				}
				a.write(func() error { return a.fr.WriteSettingsAck() })
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				a.connWindow += int64(f.Increment)
			} else {
				a.windows[f.StreamID] += int64(f.Increment)
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				a.write(func() error { return a.fr.WritePing(true, f.Data) })
			}
		case *http2.MetaHeadersFrame:
			if f.StreamEnded() {
				a.statuses[f.StreamID] = grpcStatusOf(f)
			}
		case *http2.RSTStreamFrame:
			if _, ok := a.statuses[f.StreamID]; !ok {
				a.statuses[f.StreamID] = "reset"
			}
		case *http2.GoAwayFrame:
			a.dead = true
		}
		a.cond.Broadcast()
		a.mu.Unlock()
	}
}

func grpcStatusOf(f *http2.MetaHeadersFrame) string {
	for _, hf := range f.RegularFields() {
		if hf.Name == "grpc-status" {
			return hf.Value
		}
	}
	return "no grpc-status"
}

func (a *h2Attacker) write(fn func() error) {
	a.wmu.Lock()
	defer a.wmu.Unlock()
	_ = fn() // a write error ends the connection; read() notices
}

// open starts stream id calling path, with token ("" for none).
func (a *h2Attacker) open(id uint32, path, token string) {
	a.mu.Lock()
	a.windows[id] = a.initial
	a.mu.Unlock()
	a.wmu.Lock()
	defer a.wmu.Unlock()
	a.hbuf.Reset()
	fields := []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"}, {Name: ":path", Value: path},
		{Name: ":authority", Value: "vcfsm"}, {Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
	}
	if token != "" {
		fields = append(fields, hpack.HeaderField{Name: "authorization", Value: "Bearer " + token})
	}
	for _, hf := range fields {
		require.NoError(a.t, a.enc.WriteField(hf))
	}
	require.NoError(a.t, a.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: a.hbuf.Bytes(), EndHeaders: true}))
}

// send writes n bytes of stream id's body, as flow control allows; it
// stops early when the server ends the stream or the connection.
func (a *h2Attacker) send(id uint32, body func(off int64, p []byte) int, n int64) {
	buf := make([]byte, 16<<10)
	for off := int64(0); off < n; {
		a.mu.Lock()
		for !a.dead && a.statuses[id] == "" && (a.connWindow <= 0 || a.windows[id] <= 0) {
			a.cond.Wait()
		}
		if a.dead || a.statuses[id] != "" {
			a.mu.Unlock()
			return
		}
		chunk := min(int64(len(buf)), n-off, a.connWindow, a.windows[id])
		a.connWindow -= chunk
		a.windows[id] -= chunk
		a.sent[id] += chunk
		a.mu.Unlock()
		k := body(off, buf[:chunk])
		a.write(func() error { return a.fr.WriteData(id, false, buf[:k]) })
		off += int64(k)
	}
}

// gRPCMessage is a body of one gRPC message declaring declared bytes:
// the 5-byte prefix, then zeros (an empty protobuf field run is valid).
func gRPCMessage(declared uint32) func(off int64, p []byte) int {
	var prefix [5]byte
	binary.BigEndian.PutUint32(prefix[1:], declared)
	return func(off int64, p []byte) int {
		for i := range p {
			if off+int64(i) < 5 {
				p[i] = prefix[off+int64(i)]
			} else {
				p[i] = 0
			}
		}
		return len(p)
	}
}

// result is what the server did with each stream: its grpc-status ("" while
// it is still open) and the bytes it let the attacker send.
func (a *h2Attacker) result(id uint32) (string, int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.statuses[id], a.sent[id]
}

// attack runs conns connections of streams streams each, every stream
// sending all but the last byte of a message declaring declared bytes to
// path, and returns the attackers once every stream has either been ended
// by the server or sent what it could; the streams stay open until the
// test ends.
func attack(t *testing.T, addr, path, token string, conns, streams int, declared uint32) []*h2Attacker {
	t.Helper()
	var attackers []*h2Attacker
	var wg sync.WaitGroup
	for range conns {
		a := newH2Attacker(t, addr)
		attackers = append(attackers, a)
		for s := range streams {
			id := uint32(2*s + 1)
			a.open(id, path, token)
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.send(id, gRPCMessage(declared), int64(declared)+5-1)
			}()
		}
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the attack did not finish sending within 2 minutes")
	}
	return attackers
}

// rss is the process's resident set size, after a garbage collection that
// returns what it can to the system: what the server still holds.
func rss(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	raw, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err, "RSS is read from /proc (Linux)")
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	require.Fail(t, "no VmRSS in /proc/self/status")
	return 0
}
