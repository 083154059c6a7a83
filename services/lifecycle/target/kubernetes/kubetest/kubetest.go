// Package kubetest starts real Kubernetes API servers for tests: the
// pinned kube-apiserver and etcd (make kube-test-bins builds them into
// .bin/), started by controller-runtime's envtest, with kapp-controller's
// CRDs registered.
//
// The data.packaging.carvel.dev Package and PackageMetadata CRDs STAND IN
// for kapp-controller's aggregated API server: they are generated from
// kapp-controller's own InternalPackage/InternalPackageMetadata CRDs (see
// kubetest/testdata/kapp-controller-crds.yaml, made by `make kapp-crds` with tools/kapp).
//
// When the binaries are missing or the API server cannot start, the test
// FAILS (never skips), naming what to run.
package kubetest

import (
	_ "embed" // the CRDs travel with the package
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"
)

// KubeVersion and EtcdVersion are the pinned binaries (Makefile).
const (
	KubeVersion = "1.37.2"
	EtcdVersion = "3.7.3"
)

//go:embed testdata/kapp-controller-crds.yaml
var crdsYAML []byte

// Cluster is a running API server.
type Cluster struct {
	Config *rest.Config
	Kube   kubernetes.Interface
	Dyn    dynamic.Interface
	env    *envtest.Environment
}

// assets finds the binaries: KUBEBUILDER_ASSETS, else .bin/kube-<version>
// at the repository root above this source file.
func assets() string {
	if a := os.Getenv("KUBEBUILDER_ASSETS"); a != "" {
		return a
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, ".bin", "kube-"+KubeVersion)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// CRDs are kapp-controller's CRDs (PackageInstall; Package and
// PackageMetadata standing in for its aggregated API).
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, doc := range splitYAML(crdsYAML) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, fmt.Errorf("kapp-controller CRDs: %w", err)
		}
		if crd.Name != "" {
			out = append(out, crd)
		}
	}
	return out, nil
}

// Start runs an API server (with its etcd) until the test ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	c, err := StartCluster()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

var quietOnce sync.Once

// StartCluster runs an API server; Stop it.
func StartCluster() (*Cluster, error) {
	// envtest logs through controller-runtime, which otherwise complains
	// (with a stack) that no logger was set.
	quietOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	dir := assets()
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in %q: run `make kube-test-bins` (builds kube-apiserver %s and etcd %s into .bin/) or set KUBEBUILDER_ASSETS: %w",
				bin, dir, KubeVersion, EtcdVersion, err)
		}
	}
	crds, err := CRDs()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir, CRDs: crds, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver %s from %s: %w", KubeVersion, dir, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	c := &Cluster{Config: cfg, env: env}
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		_ = env.Stop()
		return nil, err
	}
	if c.Dyn, err = dynamic.NewForConfig(cfg); err != nil {
		_ = env.Stop()
		return nil, err
	}
	return c, nil
}

// Stop stops the API server and etcd.
func (c *Cluster) Stop() error { return c.env.Stop() }

// WriteKubeconfig writes a kubeconfig reaching the cluster to file.
func (c *Cluster) WriteKubeconfig(file string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.Config.CertData, ClientKeyData: c.Config.KeyData, Token: c.Config.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	return clientcmd.WriteToFile(*kc, file)
}

func splitYAML(raw []byte) [][]byte {
	var out [][]byte
	start := 0
	for i := 0; i+4 <= len(raw); i++ {
		if (i == 0 || raw[i-1] == '\n') && string(raw[i:i+4]) == "---\n" {
			out = append(out, raw[start:i])
			start = i + 4
		}
	}
	return append(out, raw[start:])
}
