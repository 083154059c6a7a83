package hook

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"
	"sigs.k8s.io/yaml"

	"github.com/vcfsm/vcfsm/services/precheck/internal/testcerts"
)

const (
	testNS      = "svc-x"
	testService = "hook"
	testHost    = testService + "." + testNS + ".svc.cluster.local"
	testToken   = "test-token-Zq8xv"
	testSecret  = "hook-ca"
)

// packageYAML is a bundle's package.yml: a PackageMetadata and a Package
// carrying the annotations.
func packageYAML(t testing.TB, annotations map[string]string) []byte {
	t.Helper()
	meta := map[string]any{
		"apiVersion": "data.packaging.carvel.dev/v1alpha1",
		"kind":       "PackageMetadata",
		"metadata":   map[string]any{"name": "myservice.example.com"},
	}
	pkg := map[string]any{
		"apiVersion": "data.packaging.carvel.dev/v1alpha1",
		"kind":       "Package",
		"metadata":   map[string]any{"name": "myservice.example.com.1.0.0", "annotations": annotations},
		"spec":       map[string]any{"refName": "myservice.example.com", "version": "1.0.0"},
	}
	a, err := yaml.Marshal(meta)
	require.NoError(t, err)
	b, err := yaml.Marshal(pkg)
	require.NoError(t, err)
	return append(append(append([]byte("---\n"), a...), []byte("---\n")...), b...)
}

// recorded is one request a test hook received.
type recorded struct {
	method      string
	path        string
	host        string
	auth        string
	contentType string
	body        string
}

// hookServer is a real HTTP(S) server on 127.0.0.1 that records what it
// receives and answers with its handler.
type hookServer struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func (h *hookServer) requests() []recorded {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]recorded(nil), h.reqs...)
}

func (h *hookServer) addr() string { return h.srv.Listener.Addr().String() }

// startHook serves answer over http, or over https with cert when cert is
// not nil.
func startHook(t testing.TB, cert *testcerts.Server, answer http.HandlerFunc) *hookServer {
	t.Helper()
	h := &hookServer{}
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.reqs = append(h.reqs, recorded{
			method: r.Method, path: r.URL.Path, host: r.Host, auth: r.Header.Get("Authorization"),
			contentType: r.Header.Get("Content-Type"), body: string(body),
		})
		h.mu.Unlock()
		answer(w, r)
	}))
	// The TLS rows make the server log rejected handshakes; keep test
	// output to the assertions.
	h.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if cert != nil {
		h.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert.TLS}}
		h.srv.StartTLS()
	} else {
		h.srv.Start()
	}
	t.Cleanup(h.srv.Close)
	return h
}

// jsonAnswer answers 200 with body.
func jsonAnswer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

// statusAnswer answers code with body.
func statusAnswer(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// hangAnswer never answers until the caller goes away.
func hangAnswer(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// closedAddr is a 127.0.0.1 address nothing listens on.
func closedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// nxdomainResolver is a real DNS resolver talking to a DNS server on
// 127.0.0.1 that answers every question with NXDOMAIN, as a cluster DNS
// does for a Service that does not exist.
func nxdomainResolver(t testing.TB) *net.Resolver {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return // closed by the cleanup
			}
			var p dnsmessage.Parser
			hdr, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			questions, err := p.AllQuestions()
			if err != nil {
				continue
			}
			reply := dnsmessage.Message{
				Header: dnsmessage.Header{
					ID: hdr.ID, Response: true, Authoritative: true,
					RecursionDesired: hdr.RecursionDesired, RecursionAvailable: true,
					RCode: dnsmessage.RCodeNameError,
				},
				Questions: questions,
			}
			out, err := reply.Pack()
			if err != nil {
				continue
			}
			_, _ = conn.WriteTo(out, from)
		}
	}()
	t.Cleanup(func() {
		_ = conn.Close()
		<-done
	})
	addr := conn.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", addr)
		},
	}
}

// certs are the test PKI: the service's CA, a certificate it issued for
// the hook's in-cluster name, one it issued for another name, and one
// from an unrelated CA for the right name.
type certs struct {
	ca       *testcerts.CA
	other    *testcerts.CA
	good     *testcerts.Server
	wrongSAN *testcerts.Server
	otherCA  *testcerts.Server
}

func testPKI(t testing.TB) certs {
	t.Helper()
	p, err := newPKI()
	require.NoError(t, err)
	return p
}

func newPKI() (certs, error) {
	ca, err := testcerts.NewCA("svc-x hook CA")
	if err != nil {
		return certs{}, err
	}
	other, err := testcerts.NewCA("someone else's CA")
	if err != nil {
		return certs{}, err
	}
	good, err := ca.Issue(testHost)
	if err != nil {
		return certs{}, err
	}
	wrong, err := ca.Issue("other." + testNS + ".svc.cluster.local")
	if err != nil {
		return certs{}, err
	}
	foreign, err := other.Issue(testHost)
	if err != nil {
		return certs{}, err
	}
	if good == nil || wrong == nil || foreign == nil {
		return certs{}, errors.New("no certificate issued")
	}
	return certs{ca: ca, other: other, good: good, wrongSAN: wrong, otherCA: foreign}, nil
}
