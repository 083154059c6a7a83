package kubetest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KappControllerVersion is the pinned kapp-controller (Makefile
// KAPP_VERSION); make kapp-controller-bins builds it, with the ytt, kapp
// and vendir it runs, into .bin/kapp-controller-<version>/.
const KappControllerVersion = "v0.53.1"

// What kapp-controller's release config (config/config of the module)
// names.
const (
	KappNamespace       = "kapp-controller"
	kappGlobalNamespace = "kapp-controller-packaging-global"
	kappServiceAccount  = "kapp-controller-sa"
	kappAPIServiceName  = "v1alpha1.data.packaging.carvel.dev"
	kappAPIService      = "packaging-api"
)

var gvrAPIService = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// kappController is kapp-controller running against one API server: its
// two containers (controller with the aggregated API server, and the
// sidecar that runs the Carvel binaries) as processes.
type kappController struct {
	dir              string
	controller, side *podProcess
}

func (k *kappController) stop() {
	if k == nil {
		return
	}
	k.controller.stop()
	k.side.stop()
	_ = os.RemoveAll(k.dir)
}

// startKappController installs kapp-controller's RBAC and APIService on
// the cluster and runs it from the binaries in bins, as its Deployment
// would: with its service account's token, in namespace kapp-controller.
func startKappController(ctx context.Context, c *Cluster, bins string) (*kappController, error) {
	bin := filepath.Join(bins, "kapp-controller")
	for _, b := range []string{"kapp-controller", "ytt", "kbld", "kapp", "vendir"} {
		if _, err := os.Stat(filepath.Join(bins, b)); err != nil {
			return nil, fmt.Errorf("%s not found in %q: run `make kapp-controller-bins` (builds kapp-controller %s and the Carvel binaries it runs into .bin/) or set KAPP_CONTROLLER_ASSETS: %w",
				b, bins, KappControllerVersion, err)
		}
	}
	// Short: the sidecar's unix socket path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "kc")
	if err != nil {
		return nil, err
	}
	k := &kappController{dir: dir}
	if err := k.start(ctx, c, bins, bin); err != nil {
		k.stop()
		return nil, err
	}
	return k, nil
}

func (k *kappController) start(ctx context.Context, c *Cluster, bins, bin string) error {
	for _, d := range []string{"mem", filepath.Join("home", "kapp-controller")} {
		if err := os.MkdirAll(filepath.Join(k.dir, d), 0o700); err != nil {
			return err
		}
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	if err := registerAPIService(ctx, c, port); err != nil {
		return err
	}
	if err := writeServiceAccount(ctx, c, filepath.Join(k.dir, "serviceaccount")); err != nil {
		return err
	}
	env, err := kappEnv(c, k.dir, bins, port)
	if err != nil {
		return err
	}
	if k.side, err = startPodProcess(k.dir, "kapp-controller-sidecarexec", env, bin, "--sidecarexec"); err != nil {
		return err
	}
	k.controller, err = startPodProcess(k.dir, "kapp-controller", env, bin,
		"-packaging-global-namespace="+kappGlobalNamespace,
		// The generic API server of kapp-controller v0.53.1 (k8s.io/apiserver
		// v0.27) reads flowcontrol v1beta3, which Kubernetes 1.32 removed.
		"-enable-api-priority-and-fairness=false",
		"-metrics-bind-address=0",
		"-concurrency=4")
	if err != nil {
		return err
	}
	return k.waitReady(ctx, c)
}

// kappEnv is the environment of both containers: what the Deployment sets,
// plus what Kubernetes gives a pod (the API server's address).
func kappEnv(c *Cluster, dir, bins string, port int) ([]string, error) {
	host, err := url.Parse(c.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("API server address %q: %w", c.Config.Host, err)
	}
	return []string{
		"PATH=" + bins + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + podHome,
		"KAPPCTRL_MEM_TMP_DIR=" + filepath.Join(dir, "mem"),
		"KAPPCTRL_SIDECAREXEC_SOCK=" + filepath.Join(dir, "mem", "sidecarexec.sock"),
		"KAPPCTRL_SYSTEM_NAMESPACE=" + KappNamespace,
		"KAPPCTRL_API_PORT=" + strconv.Itoa(port),
		"KUBERNETES_SERVICE_HOST=" + host.Hostname(),
		"KUBERNETES_SERVICE_PORT=" + host.Port(),
		"SSL_CERT_FILE=/etc/pki/tls/certs/ca-bundle.crt",
	}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// registerAPIService registers kapp-controller's aggregated API as its
// release does (config/config/agg-api.yml), except for where it is served:
// there is no pod network, so the Service is an ExternalName for localhost
// and the APIService names the process's port. kube-apiserver's aggregator
// resolves an ExternalName Service to https://<name>:<port>, and checks the
// certificate against the name packaging-api.kapp-controller.svc, which
// kapp-controller's self-signed certificate carries.
func registerAPIService(ctx context.Context, c *Cluster, port int) error {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: kappAPIService, Namespace: KappNamespace},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "main", Port: int32(port), Protocol: corev1.ProtocolTCP}}}}
	if _, err := c.Kube.CoreV1().Services(KappNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kapp-controller's Service: %w", err)
	}
	api := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": kappAPIServiceName},
		"spec": map[string]any{"group": "data.packaging.carvel.dev", "version": "v1alpha1",
			"groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"service": map[string]any{"name": kappAPIService, "namespace": KappNamespace, "port": int64(port)}},
	}}
	if _, err := c.Dyn.Resource(gvrAPIService).Create(ctx, api, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kapp-controller's APIService: %w", err)
	}
	return nil
}

// writeServiceAccount writes what a pod of kapp-controller's service
// account finds in /var/run/secrets/kubernetes.io/serviceaccount: a token
// (from the TokenRequest API, as a projected token is), the API server's
// CA and the namespace.
func writeServiceAccount(ctx context.Context, c *Cluster, dir string) error {
	expiry := int64((7 * 24 * time.Hour).Seconds())
	tok, err := c.Kube.CoreV1().ServiceAccounts(KappNamespace).CreateToken(ctx, kappServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token of kapp-controller's service account: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for name, data := range map[string][]byte{"token": []byte(tok.Status.Token), "ca.crt": c.Config.CAData, "namespace": []byte(KappNamespace)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// waitReady waits until the aggregated API is available (kapp-controller
// starts its controllers after that) or a process ends.
func (k *kappController) waitReady(ctx context.Context, c *Cluster) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		for _, p := range []*podProcess{k.side, k.controller} {
			if err := p.exited(); err != nil {
				return err
			}
		}
		api, err := c.Dyn.Resource(gvrAPIService).Get(ctx, kappAPIServiceName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if err == nil && available(api) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("kapp-controller's aggregated API did not become available within 3 minutes: " + k.controller.tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func available(api *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(api.Object, "status", "conditions")
	for _, raw := range conds {
		cm, _ := raw.(map[string]any)
		if cm["type"] == "Available" && cm["status"] == "True" {
			return true
		}
	}
	return false
}
