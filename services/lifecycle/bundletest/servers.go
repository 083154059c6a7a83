// Package bundletest builds real imgpkg bundles for tests and serves them the
// way production does: bundle trees adapted from the real example bundle,
// pushed with imgpkg's own push command (in-process) to a real in-process OCI
// registry (go-containerregistry's pkg/registry), copied to tarballs with
// imgpkg copy --to-tar, and served over real HTTPS with a per-server CA.
// Everything binds to 127.0.0.1 and is stopped by t.Cleanup.
//
// It also builds hostile bundles (crafted tar layers labelled as imgpkg
// bundles) so the fetcher's defences can be tested end to end.
package bundletest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/stretchr/testify/require"
)

// CA is a throw-away certificate authority with one server certificate for
// 127.0.0.1, ::1 and localhost.
type CA struct {
	Pool    *x509.CertPool
	PEM     []byte // the CA certificate, PEM-encoded
	PEMFile string // PEM written to a file in the test's temp dir (for imgpkg --registry-ca-cert-path)
	server  tls.Certificate
}

// NewCA creates a fresh CA, so two servers never trust each other's
// certificates by accident (httptest's built-in certificate is shared).
// Its server certificate is for 127.0.0.1, localhost and dnsNames.
func NewCA(t testing.TB, dnsNames ...string) *CA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "bundletest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:     append([]string{"localhost"}, dnsNames...),
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	require.NoError(t, err)

	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	pemFile := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(pemFile, caPEM, 0o600))
	return &CA{
		Pool:    pool,
		PEM:     caPEM,
		PEMFile: pemFile,
		server:  tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey},
	}
}

// ServerTLS is the server side of the CA's certificate, for a test's own
// HTTPS server (e.g. a pre-check hook).
func (ca *CA) ServerTLS() *tls.Config { return ca.serverConfig() }

func (ca *CA) serverConfig() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{ca.server}, MinVersion: tls.VersionTLS12}
}

// quietLog swallows the TLS handshake errors that tests of untrusted
// certificates provoke on purpose.
func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }

// Registry is a real OCI registry (go-containerregistry's pkg/registry) on
// 127.0.0.1: plain HTTP from NewRegistry, HTTPS from NewTLSRegistry.
type Registry struct {
	Host string // "127.0.0.1:<port>"
	CA   *CA    // nil for a plain-HTTP registry
	srv  *httptest.Server
}

// NewRegistry starts an in-memory registry over plain HTTP on 127.0.0.1
// (go-containerregistry talks plain HTTP to loopback registries).
func NewRegistry(t testing.TB) *Registry {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(quietLog())))
	t.Cleanup(srv.Close)
	return &Registry{Host: strings.TrimPrefix(srv.URL, "http://"), srv: srv}
}

// NewTLSRegistry starts an in-memory registry over HTTPS with its own CA.
func NewTLSRegistry(t testing.TB) *Registry {
	t.Helper()
	ca := NewCA(t)
	srv := httptest.NewUnstartedServer(registry.New(registry.Logger(quietLog())))
	srv.TLS = ca.serverConfig()
	srv.Config.ErrorLog = quietLog()
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &Registry{Host: strings.TrimPrefix(srv.URL, "https://"), CA: ca, srv: srv}
}

// Ref returns "<host>/<repoRef>", e.g. Ref("myservice:1.0.0").
func (r *Registry) Ref(repoRef string) string { return r.Host + "/" + repoRef }

// OCI returns the bundle source for repoRef: "oci://<host>/<repoRef>".
func (r *Registry) OCI(repoRef string) string { return "oci://" + r.Ref(repoRef) }

// RootCAs returns the pool that trusts this registry (nil for plain HTTP).
func (r *Registry) RootCAs() *x509.CertPool {
	if r.CA == nil {
		return nil
	}
	return r.CA.Pool
}

// Transport returns an HTTP transport that trusts this registry.
func (r *Registry) Transport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: r.RootCAs(), MinVersion: tls.VersionTLS12}
	return t
}

// ImgpkgArgs are the registry flags imgpkg needs for this registry.
func (r *Registry) ImgpkgArgs() []string {
	args := []string{"--registry-anon"}
	if r.CA == nil {
		return append(args, "--registry-insecure")
	}
	return append(args, "--registry-ca-cert-path", r.CA.PEMFile)
}

// TarServer serves tarballs over HTTPS (its own CA) or, from
// NewPlainTarServer, over plain HTTP. Unknown names answer 404.
type TarServer struct {
	CA  *CA // nil for plain HTTP
	srv *httptest.Server

	mu       sync.Mutex
	files    map[string]string
	handlers map[string]http.Handler
	hits     map[string]int
}

// NewTarServer starts an HTTPS file server on 127.0.0.1 with a fresh CA.
func NewTarServer(t testing.TB) *TarServer {
	t.Helper()
	s := newTarServer()
	s.CA = NewCA(t)
	s.srv = httptest.NewUnstartedServer(s)
	s.srv.TLS = s.CA.serverConfig()
	s.srv.Config.ErrorLog = quietLog()
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	return s
}

// NewPlainTarServer starts a plain-HTTP file server on 127.0.0.1 (for
// testing http:// sources, which need AllowInsecure).
func NewPlainTarServer(t testing.TB) *TarServer {
	t.Helper()
	s := newTarServer()
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

func newTarServer() *TarServer {
	return &TarServer{files: map[string]string{}, handlers: map[string]http.Handler{}, hits: map[string]int{}}
}

// Add serves the file at path as /<name>.
func (s *TarServer) Add(name, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[name] = path
}

// Handle serves /<name> with h (e.g. to stall or fail a download).
func (s *TarServer) Handle(name string, h http.Handler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[name] = h
}

// URL returns the URL of /<name>.
func (s *TarServer) URL(name string) string { return s.srv.URL + "/" + name }

// RootCAs returns the pool that trusts this server (nil for plain HTTP).
func (s *TarServer) RootCAs() *x509.CertPool {
	if s.CA == nil {
		return nil
	}
	return s.CA.Pool
}

// Hits returns how many requests /<name> received.
func (s *TarServer) Hits(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[name]
}

func (s *TarServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/")
	s.mu.Lock()
	s.hits[name]++
	h, path := s.handlers[name], s.files[name]
	s.mu.Unlock()
	switch {
	case h != nil:
		h.ServeHTTP(w, r)
	case path != "":
		f, err := os.Open(path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer func() { _ = f.Close() }()
		info, err := f.Stat()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-tar")
		http.ServeContent(w, r, name, info.ModTime(), f)
	default:
		http.NotFound(w, r)
	}
}
