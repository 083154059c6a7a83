package kubernetes_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes/kubetest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/targettest"
)

// Two real API servers, sv1 and sv2, shared by the package's tests (each
// test wipes what the driver left).
var (
	clustersOnce sync.Once
	clusters     map[string]*kubetest.Cluster
	clustersErr  error
)

func testClusters(t *testing.T) map[string]*kubetest.Cluster {
	t.Helper()
	clustersOnce.Do(func() {
		clusters = map[string]*kubetest.Cluster{}
		for _, name := range []string{"sv1", "sv2"} {
			c, err := kubetest.StartCluster()
			if err != nil {
				clustersErr = err
				return
			}
			clusters[name] = c
		}
	})
	require.NoError(t, clustersErr, "the Kubernetes driver tests need real API servers")
	return clusters
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range clusters {
		_ = c.Stop()
	}
	os.Exit(code)
}

// restConfigs reaches sv1 and sv2; any other Supervisor has no kubeconfig.
func restConfigs(cs map[string]*kubetest.Cluster) func(string) (*rest.Config, error) {
	return func(name string) (*rest.Config, error) {
		c, ok := cs[name]
		if !ok {
			return nil, fmt.Errorf("supervisor %s has no kubeconfig: %w", name, target.ErrUnreachable)
		}
		return c.Config, nil
	}
}

var wiped = []schema.GroupVersionResource{
	{Group: "packaging.carvel.dev", Version: "v1alpha1", Resource: "packageinstalls"},
	{Version: "v1", Resource: "secrets"}, {Version: "v1", Resource: "services"},
	{Group: "data.packaging.carvel.dev", Version: "v1alpha1", Resource: "packages"},
	{Group: "data.packaging.carvel.dev", Version: "v1alpha1", Resource: "packagemetadatas"},
}

// wipe removes every object in svc-* namespaces, finalizers first: the
// PackageInstalls, then what kapp-controller made of them, then the rest.
func wipe(t *testing.T, cs map[string]*kubetest.Cluster) {
	t.Helper()
	ctx := context.Background()
	for _, c := range cs {
		nss, err := c.Kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, ns := range nss.Items {
			if len(ns.Name) < 4 || ns.Name[:4] != "svc-" {
				continue
			}
			for i, gvr := range wiped {
				if i == 1 {
					wipeKapp(t, c, ns.Name)
				}
				list, err := c.Dyn.Resource(gvr).Namespace(ns.Name).List(ctx, metav1.ListOptions{})
				require.NoError(t, err)
				for _, u := range list.Items {
					if len(u.GetFinalizers()) > 0 {
						u.SetFinalizers(nil)
						_, err := c.Dyn.Resource(gvr).Namespace(ns.Name).Update(ctx, &u, metav1.UpdateOptions{})
						if !apierrors.IsNotFound(err) {
							require.NoError(t, err)
						}
					}
					err := c.Dyn.Resource(gvr).Namespace(ns.Name).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
					if !apierrors.IsNotFound(err) {
						require.NoError(t, err)
					}
				}
			}
		}
	}
}

// preexisting creates unowned Secrets as someone else would.
func preexisting(t *testing.T, c *kubetest.Cluster, objs []target.Object) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		require.Equal(t, "Secret", o.Kind, "the contract's pre-existing Supervisor resources are Secrets")
		ns, name, _ := cutSlash(o.Identity)
		_, err := c.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{}, StringData: map[string]string{}}
		for k, v := range mapOf(o.Spec["stringData"]) {
			s.StringData[k] = v.(string)
		}
		for k, v := range mapOf(o.Spec["data"]) {
			s.StringData[k] = decode(t, v.(string))
		}
		if im, ok := o.Spec["immutable"].(bool); ok {
			s.Immutable = &im
		}
		_, err = c.Kube.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// The contract on real API servers, through the Router as deployed:
// Supervisor Secrets and SupervisorServices on Kubernetes, the rest on the
// simulator.
func TestContract(t *testing.T) {
	cs := testClusters(t)
	var mu sync.Mutex
	paths := map[*testing.T]string{}
	targettest.RunSubject(t, func(t *testing.T, pre []target.Object) target.Driver {
		mu.Lock()
		p, reopen := paths[t]
		if !reopen {
			p = filepath.Join(t.TempDir(), "sim.db")
			paths[t] = p
		}
		mu.Unlock()
		if !reopen {
			wipe(t, cs)
			preexisting(t, cs["sv1"], pre)
		}
		sim, err := simulator.Open(simulator.Config{Path: p})
		require.NoError(t, err)
		r := &target.Router{Primary: kubernetes.New(kubernetes.Config{RESTConfig: restConfigs(cs)}), Handles: kubernetes.Handles, Fallback: sim}
		t.Cleanup(func() { _ = r.Close() })
		return r
	}, targettest.SupervisorSecrets)
}
