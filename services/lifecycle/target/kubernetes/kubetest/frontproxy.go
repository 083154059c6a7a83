package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// frontProxyClient is the name kube-apiserver's aggregator presents to
// aggregated API servers, and the one they accept (--requestheader-allowed-names).
const frontProxyClient = "front-proxy-client"

// configureAggregation gives the API server what it needs to proxy to an
// aggregated API server (kapp-controller's data.packaging.carvel.dev): a
// front-proxy CA and the aggregator's client certificate, the request
// headers it passes the user in, as kubeadm configures them. The files go
// to dir.
func configureAggregation(env *envtest.Environment, dir string) error {
	caPEM, clientPEM, keyPEM, err := frontProxyCerts()
	if err != nil {
		return fmt.Errorf("front-proxy certificates: %w", err)
	}
	files := map[string][]byte{"front-proxy-ca.crt": caPEM, "front-proxy-client.crt": clientPEM, "front-proxy-client.key": keyPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("front-proxy certificates: %w", err)
		}
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Set("requestheader-client-ca-file", filepath.Join(dir, "front-proxy-ca.crt"))
	args.Set("requestheader-allowed-names", frontProxyClient)
	args.Set("requestheader-username-headers", "X-Remote-User")
	args.Set("requestheader-group-headers", "X-Remote-Group")
	args.Set("requestheader-extra-headers-prefix", "X-Remote-Extra-")
	args.Set("proxy-client-cert-file", filepath.Join(dir, "front-proxy-client.crt"))
	args.Set("proxy-client-key-file", filepath.Join(dir, "front-proxy-client.key"))
	return nil
}

// frontProxyCerts makes a CA and the aggregator's client certificate,
// PEM-encoded.
func frontProxyCerts() (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "front-proxy-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: frontProxyClient},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
