// Package kubetest starts real Kubernetes API servers for tests, each with
// the real kapp-controller reconciling on it: the pinned kube-apiserver and
// etcd (make kube-test-bins builds them into .bin/), started by
// controller-runtime's envtest, with kapp-controller's CRDs, namespace,
// RBAC and aggregated API (data.packaging.carvel.dev) registered as its
// release config does, and kapp-controller itself (make
// kapp-controller-bins) running as two processes against it. README.md of
// the kubernetes package says what differs from a pod and why.
//
// When the binaries are missing or a part cannot start, the test FAILS
// (never skips), naming what to run.
package kubetest

import (
	"context"
	_ "embed" // the manifests travel with the package
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// kappManifests is kapp-controller's release config (namespaces, CRDs,
// RBAC) rendered by its own ytt templates: make kapp-manifests.
//
//go:embed testdata/kapp-controller.yaml
var kappManifests []byte

// Cluster is a running API server with kapp-controller.
type Cluster struct {
	Config *rest.Config
	Kube   kubernetes.Interface
	Dyn    dynamic.Interface
	env    *envtest.Environment
	kapp   *kappController
	certs  string
}

// binDir finds pinned binaries: the environment variable, else
// .bin/<sub> at the repository root above this source file.
func binDir(envVar, sub string) string {
	if a := os.Getenv(envVar); a != "" {
		return a
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return filepath.Join(dir, ".bin", sub)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// Manifests splits kapp-controller's release config into its CRDs and the
// other objects (namespaces, service account, RBAC).
func Manifests() ([]*apiextensionsv1.CustomResourceDefinition, []*unstructured.Unstructured, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	var objs []*unstructured.Unstructured
	for _, doc := range splitYAML(kappManifests) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, nil, fmt.Errorf("kapp-controller manifests: %w", err)
		}
		switch u.GetKind() {
		case "":
		case "CustomResourceDefinition":
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := yaml.UnmarshalStrict(doc, crd); err != nil {
				return nil, nil, fmt.Errorf("kapp-controller CRDs: %w", err)
			}
			crds = append(crds, crd)
		default:
			objs = append(objs, u)
		}
	}
	return crds, objs, nil
}

// Start runs an API server (with its etcd and kapp-controller) until the
// test ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	c, err := StartCluster()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

var quietOnce sync.Once

// StartCluster runs an API server and kapp-controller; Stop them.
func StartCluster() (*Cluster, error) {
	// envtest logs through controller-runtime, which otherwise complains
	// (with a stack) that no logger was set.
	quietOnce.Do(func() { ctrllog.SetLogger(logr.Discard()) })
	dir := binDir("KUBEBUILDER_ASSETS", "kube-"+KubeVersion)
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return nil, fmt.Errorf("%s not found in %q: run `make kube-test-bins` (builds kube-apiserver %s and etcd %s into .bin/) or set KUBEBUILDER_ASSETS: %w",
				bin, dir, KubeVersion, EtcdVersion, err)
		}
	}
	crds, objs, err := Manifests()
	if err != nil {
		return nil, err
	}
	c := &Cluster{env: &envtest.Environment{BinaryAssetsDirectory: dir, CRDs: crds, ErrorIfCRDPathMissing: true}}
	if c.certs, err = os.MkdirTemp("", "kubetest-front-proxy"); err != nil {
		return nil, err
	}
	if err := configureAggregation(c.env, c.certs); err != nil {
		_ = os.RemoveAll(c.certs)
		return nil, err
	}
	if err := c.start(dir, objs); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(dir string, objs []*unstructured.Unstructured) error {
	cfg, err := c.env.Start()
	if err != nil {
		return fmt.Errorf("start kube-apiserver %s from %s: %w", KubeVersion, dir, err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	c.Config = cfg
	if c.Kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if c.Dyn, err = dynamic.NewForConfig(cfg); err != nil {
		return err
	}
	ctx := context.Background()
	if err := c.create(ctx, objs); err != nil {
		return err
	}
	if err := aggregateClusterRoles(ctx, c.Kube); err != nil {
		return err
	}
	c.kapp, err = startKappController(ctx, c, binDir("KAPP_CONTROLLER_ASSETS", "kapp-controller-"+KappControllerVersion))
	return err
}

// manifestKinds are the kinds of kapp-controller's release config besides
// its CRDs.
var manifestKinds = map[string]schema.GroupVersionResource{
	"Namespace":          {Version: "v1", Resource: "namespaces"},
	"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
	"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	"RoleBinding":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

func (c *Cluster) create(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, u := range objs {
		gvr, ok := manifestKinds[u.GetKind()]
		if !ok {
			return fmt.Errorf("kapp-controller manifests: kind %s is not one kubetest installs", u.GetKind())
		}
		var err error
		if u.GetNamespace() == "" {
			_, err = c.Dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
		} else {
			_, err = c.Dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("kapp-controller manifests: %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// Stop stops kapp-controller, the API server and etcd.
func (c *Cluster) Stop() error {
	c.kapp.stop()
	defer func() { _ = os.RemoveAll(c.certs) }()
	return c.env.Stop()
}

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
