package app

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
)

// EtcdAccess is how lifecycle authenticates to etcd and verifies it.
type EtcdAccess struct {
	// CA verifies etcd's server certificate; setting it (or Cert) turns on
	// TLS.
	CA string
	// Cert and Key are the client certificate etcd may require.
	Cert string
	Key  string
	// Username enables etcd authentication; the password comes from
	// PasswordFile (mode 0600), never from a flag value.
	Username     string
	PasswordFile string
}

// RegisterFlags binds the etcd access flags.
func (e *EtcdAccess) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&e.CA, "etcd-ca", "", "PEM CA bundle verifying etcd's certificate; turns on TLS to etcd")
	fs.StringVar(&e.Cert, "etcd-cert", "", "PEM client certificate presented to etcd (with --etcd-key)")
	fs.StringVar(&e.Key, "etcd-key", "", "PEM private key of --etcd-cert")
	fs.StringVar(&e.Username, "etcd-username", "", "etcd user; its password is read from --etcd-password-file")
	fs.StringVar(&e.PasswordFile, "etcd-password-file", "", "file holding the etcd password (mode 0600)")
}

func (e EtcdAccess) apply(cfg *etcdstore.Config) error {
	if e.Username != "" {
		if e.PasswordFile == "" {
			return fmt.Errorf("--etcd-username needs --etcd-password-file")
		}
		pw, err := cli.ReadSecretFile(e.PasswordFile)
		if err != nil {
			return fmt.Errorf("--etcd-password-file: %w", err)
		}
		cfg.Username, cfg.Password = e.Username, strings.TrimSpace(pw)
	}
	if e.CA == "" && e.Cert == "" && e.Key == "" {
		return nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if e.CA != "" {
		raw, err := os.ReadFile(e.CA)
		if err != nil {
			return fmt.Errorf("--etcd-ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(raw) {
			return fmt.Errorf("--etcd-ca: %s holds no PEM certificate", e.CA)
		}
	}
	if (e.Cert == "") != (e.Key == "") {
		return fmt.Errorf("--etcd-cert and --etcd-key go together")
	}
	if e.Cert != "" {
		cert, err := tls.LoadX509KeyPair(e.Cert, e.Key)
		if err != nil {
			return fmt.Errorf("--etcd-cert/--etcd-key: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	cfg.TLS = tc
	return nil
}
