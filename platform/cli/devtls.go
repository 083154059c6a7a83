package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// DevTLSFiles are the files EnsureDevTLS keeps: a CA and one certificate,
// valid for localhost and the loopback addresses, that serves HTTPS and
// gRPC and is presented as the client certificate between services.
type DevTLSFiles struct {
	CA   string
	Cert string
	Key  string
}

// EnsureDevTLS returns the development CA and certificate in dir, creating
// them (keys mode 0600) when absent; hosts are further names (or
// addresses) the certificate is valid for. created tells whether it just
// did.
func EnsureDevTLS(dir string, hosts ...string) (files DevTLSFiles, created bool, err error) {
	files = DevTLSFiles{CA: filepath.Join(dir, "ca.crt"), Cert: filepath.Join(dir, "tls.crt"), Key: filepath.Join(dir, "tls.key")}
	if exists(files.CA) && exists(files.Cert) && exists(files.Key) {
		return files, false, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return files, false, fmt.Errorf("--dev-tls: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, false, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "vcfsm development CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(5, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return files, false, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return files, false, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return files, false, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: "vcfsm"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(1, 0, 0),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return files, false, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return files, false, err
	}
	err = errors.Join(
		writePEM(files.CA, "CERTIFICATE", caDER, 0o644),
		writePEM(files.Cert, "CERTIFICATE", der, 0o644),
		writePEM(files.Key, "EC PRIVATE KEY", keyDER, 0o600),
	)
	if err != nil {
		return files, false, fmt.Errorf("--dev-tls: %w", err)
	}
	return files, true, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func writePEM(path, typ string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), mode)
}
