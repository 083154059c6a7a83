package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/vcfsm/vcfsm/platform/grpcx"
)

// GRPCTLS is the mTLS configuration of gRPC between services: this
// process's certificate (served to callers and presented to peers) and the
// CA that signs every service's certificate.
type GRPCTLS struct {
	Cert string
	Key  string
	CA   string
}

// RegisterFlags binds --grpc-tls-cert, --grpc-tls-key and --grpc-tls-ca.
func (t *GRPCTLS) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&t.Cert, "grpc-tls-cert", "", "PEM certificate this process serves gRPC with and presents to peers (mTLS; with --grpc-tls-key and --grpc-tls-ca)")
	fs.StringVar(&t.Key, "grpc-tls-key", "", "PEM private key of --grpc-tls-cert")
	fs.StringVar(&t.CA, "grpc-tls-ca", "", "PEM CA bundle that signs the certificates of every service; callers and peers must present one it signed")
}

// Enabled reports whether mTLS is configured.
func (t GRPCTLS) Enabled() bool { return t.Cert != "" || t.Key != "" || t.CA != "" }

func (t GRPCTLS) load() (tls.Certificate, *x509.CertPool, error) {
	if t.Cert == "" || t.Key == "" || t.CA == "" {
		return tls.Certificate{}, nil, errors.New("--grpc-tls-cert, --grpc-tls-key and --grpc-tls-ca go together")
	}
	cert, err := tls.LoadX509KeyPair(t.Cert, t.Key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("--grpc-tls-cert/--grpc-tls-key: %w", err)
	}
	raw, err := os.ReadFile(t.CA)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("--grpc-tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		return tls.Certificate{}, nil, fmt.Errorf("--grpc-tls-ca: %s holds no PEM certificate", t.CA)
	}
	return cert, pool, nil
}

// ServerCreds are the listener's credentials: nil (plain) when mTLS is not
// configured; otherwise TLS 1.3 requiring a client certificate the CA
// signed.
func (t GRPCTLS) ServerCreds() (credentials.TransportCredentials, error) {
	if !t.Enabled() {
		return nil, nil
	}
	cert, pool, err := t.load()
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(&tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}), nil
}

// DialOptions make a client connection present this process's certificate
// and verify the peer against the CA; none when mTLS is not configured.
func (t GRPCTLS) DialOptions() ([]grpc.DialOption, error) {
	if !t.Enabled() {
		return nil, nil
	}
	cert, pool, err := t.load()
	if err != nil {
		return nil, err
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{cert},
		RootCAs:      pool,
	}))}, nil
}

// GRPCLimits are the flags of grpcx.Limits.
type GRPCLimits struct {
	grpcx.Limits
}

// RegisterFlags binds the gRPC limits.
func (l *GRPCLimits) RegisterFlags(fs *flag.FlagSet) {
	fs.Func("grpc-max-concurrent-streams", fmt.Sprintf("most gRPC calls in flight per client connection (default %d)", grpcx.DefaultMaxConcurrentStreams), func(v string) error {
		var n uint32
		if _, err := fmt.Sscan(v, &n); err != nil || n == 0 {
			return fmt.Errorf("want a positive number, got %q", v)
		}
		l.MaxConcurrentStreams = n
		return nil
	})
	fs.DurationVar(&l.KeepaliveMinTime, "grpc-keepalive-min-time", grpcx.DefaultKeepaliveMinTime, "shortest keepalive ping interval a gRPC client may use; faster pingers are disconnected")
	fs.DurationVar(&l.MaxConnectionIdle, "grpc-max-connection-idle", grpcx.DefaultMaxConnectionIdle, "close gRPC connections idle this long")
	fs.IntVar(&l.MaxAnonymousReads, "grpc-max-anonymous-reads", grpcx.DefaultMaxAnonymousReads, "most gRPC calls without a token (health checks, reflection) reading their request at once; more are refused ResourceExhausted")
	fs.DurationVar(&l.AnonymousReadTimeout, "grpc-anonymous-read-timeout", grpcx.DefaultAnonymousReadTimeout, "how long a gRPC call without a token has to send each request message; past it the call ends")
	fs.Func("grpc-max-header-bytes", fmt.Sprintf("most bytes of a gRPC call's headers, read before the call is authenticated (default %d)", grpcx.DefaultMaxHeaderListBytes), func(v string) error {
		var n uint32
		if _, err := fmt.Sscan(v, &n); err != nil || n == 0 {
			return fmt.Errorf("want a positive number, got %q", v)
		}
		l.MaxHeaderListBytes = n
		return nil
	})
}
