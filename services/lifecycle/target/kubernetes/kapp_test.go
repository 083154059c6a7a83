package kubernetes_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes/kubetest"
)

var (
	gvrPI   = schema.GroupVersionResource{Group: "packaging.carvel.dev", Version: "v1alpha1", Resource: "packageinstalls"}
	gvrPkg  = schema.GroupVersionResource{Group: "data.packaging.carvel.dev", Version: "v1alpha1", Resource: "packages"}
	gvrPkgm = schema.GroupVersionResource{Group: "data.packaging.carvel.dev", Version: "v1alpha1", Resource: "packagemetadatas"}
	gvrApp  = schema.GroupVersionResource{Group: "kappctrl.k14s.io", Version: "v1alpha1", Resource: "apps"}
)

// kappFinalizer is the finalizer kapp-controller puts on a PackageInstall.
const kappFinalizer = "finalizers.packageinstall.packaging.carvel.dev/delete"

// arcturusTemplate is the package's ytt template: one ConfigMap, whose
// contents come from the package version and the values (the kind an API
// server without nodes holds).
const arcturusTemplate = `#@ load("@ytt:data", "data")
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: arcturus-settings
data:
  version: "VERSION"
  replicas: #@ str(data.values.replicas)
  endpoint: https://arcturus.example.com
`

// brokenTemplate fails in ytt: it reads a value the package never declares.
const brokenTemplate = `#@ load("@ytt:data", "data")
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: arcturus-settings
data:
  replicas: #@ str(data.values.no_such_value)
`

// pushArcturus pushes the package's bundle at version (its template, with
// VERSION replaced) to reg and returns its digest reference.
func pushArcturus(t *testing.T, reg *bundletest.Registry, version, template string) string {
	t.Helper()
	return bundletest.PushPackageBundle(t, reg, "arcturus:"+version, map[string]string{
		"config/values.yml":   "#@data/values\n---\nreplicas: 1\n",
		"config/settings.yml": strings.ReplaceAll(template, "VERSION", version),
	})
}

// reconciled polls like eventually, with room for kapp-controller's
// fetch, ytt and kapp on a loaded machine.
func reconciled[T any](t *testing.T, what string, get func() (T, error), ok func(T) bool) T {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		v, err := get()
		if err == nil && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last: %+v, %v", what, v, err)
		}
		<-time.After(100 * time.Millisecond)
	}
}

// healthy waits until the SupervisorService reads Healthy.
func healthy(t *testing.T, d *kubernetes.Driver) target.Object {
	t.Helper()
	return reconciled(t, "the SupervisorService Healthy", func() (target.Object, error) { return d.Get(context.Background(), ssKey) },
		func(o target.Object) bool { return o.Status == target.StatusHealthy })
}

// settings waits until the deployed ConfigMap holds version and replicas.
func settings(t *testing.T, c *kubetest.Cluster, version, replicas string) {
	t.Helper()
	reconciled(t, "arcturus-settings at "+version+" with "+replicas+" replicas", func() (map[string]string, error) {
		cm, err := c.Kube.CoreV1().ConfigMaps(ns).Get(context.Background(), "arcturus-settings", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return cm.Data, nil
	}, func(data map[string]string) bool { return data["version"] == version && data["replicas"] == replicas })
}

// installedVersion checks kapp-controller's own record of the version.
func installedVersion(t *testing.T, c *kubetest.Cluster, version string) {
	t.Helper()
	pi, err := c.Dyn.Resource(gvrPI).Namespace(ns).Get(context.Background(), "arcturus-registry.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	v, _, _ := unstructured.NestedString(pi.Object, "status", "version")
	require.Equal(t, version, v)
}

// install applies the values and the SupervisorService of image and waits
// until kapp-controller reports it reconciled.
func install(t *testing.T, d *kubernetes.Driver, image string) {
	t.Helper()
	ctx := context.Background()
	_, err := d.Apply(ctx, valuesSecret("replicas: 3\n"))
	require.NoError(t, err)
	_, err = d.Apply(ctx, target.Desired{Key: ssKey, Namespace: ns, Spec: ssDoc("1.0.0", image), Owner: owner1,
		Finalizers: []string{"services.vcfa.broadcom.com/cleanup"}})
	require.NoError(t, err)
}

// A package whose template ytt cannot render: kapp-controller reports
// ReconcileFailed, and the SupervisorService is Unhealthy with
// kapp-controller's own message.
func TestTemplateErrorIsReconcileFailed(t *testing.T) {
	cs := testClusters(t)
	d := newDriver(t, cs)
	install(t, d, pushArcturus(t, bundletest.NewRegistry(t), "1.0.0", brokenTemplate))
	got := reconciled(t, "the SupervisorService Unhealthy", func() (target.Object, error) { return d.Get(context.Background(), ssKey) },
		func(o target.Object) bool { return o.Status == target.StatusUnhealthy })
	require.Contains(t, got.Message, "no_such_value", "ytt's error, as kapp-controller reports it")
	pi, err := cs["sv1"].Dyn.Resource(gvrPI).Namespace(ns).Get(context.Background(), "arcturus-registry.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	useful, _, _ := unstructured.NestedString(pi.Object, "status", "usefulErrorMessage")
	require.Equal(t, useful, got.Message, "the message is kapp-controller's usefulErrorMessage")
	conds, _, _ := unstructured.NestedSlice(pi.Object, "status", "conditions")
	require.NotEmpty(t, conds)
	require.Equal(t, "ReconcileFailed", conds[0].(map[string]any)["type"])
}

// Drift of what kapp-controller deployed: an edited and then a deleted
// ConfigMap of the package are reported (the watch names the service; Get
// reports the drift, naming the ConfigMap), and Apply — what the
// controllers do on drift — has kapp-controller put them back.
func TestPackageDriftIsCorrected(t *testing.T) {
	cs := testClusters(t)
	d := newDriver(t, cs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	changed := 0
	require.NoError(t, d.Watch(ctx, func(id string) {
		mu.Lock()
		defer mu.Unlock()
		if id == owner1.ServiceID {
			changed++
		}
	}))
	count := func() (int, error) { mu.Lock(); defer mu.Unlock(); return changed, nil }
	image := pushArcturus(t, bundletest.NewRegistry(t), "1.0.0", arcturusTemplate)
	install(t, d, image)
	healthy(t, d)
	c := cs["sv1"]
	cms := c.Kube.CoreV1().ConfigMaps(ns)
	want := target.Desired{Key: ssKey, Namespace: ns, Spec: ssDoc("1.0.0", image), Owner: owner1, Finalizers: []string{"services.vcfa.broadcom.com/cleanup"}}

	before, _ := count()
	cm, err := cms.Get(ctx, "arcturus-settings", metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["replicas"] = "99"
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, "the edit to be reported", count, func(n int) bool { return n > before })
	got, err := d.Get(ctx, ssKey)
	require.NoError(t, err)
	require.Equal(t, target.StatusBusy, got.Status)
	require.Contains(t, got.Message, "ConfigMap "+ns+"/arcturus-settings deployed by kapp-controller from the package: data was changed on the cluster")
	require.NotEqual(t, want.Spec, got.Spec, "the drift is marked, so the controllers apply again")
	obj, err := d.Apply(ctx, want)
	require.NoError(t, err)
	require.Contains(t, obj.Message, "arcturus-settings")
	settings(t, c, "1.0.0", "3")
	got = healthy(t, d)
	require.Equal(t, want.Spec, got.Spec)

	before, _ = count()
	require.NoError(t, cms.Delete(ctx, "arcturus-settings", metav1.DeleteOptions{}))
	eventually(t, "the delete to be reported", count, func(n int) bool { return n > before })
	got, err = d.Get(ctx, ssKey)
	require.NoError(t, err)
	require.Equal(t, target.StatusBusy, got.Status)
	require.Contains(t, got.Message, "ConfigMap "+ns+"/arcturus-settings deployed by kapp-controller from the package was deleted on the cluster")
	_, err = d.Apply(ctx, want)
	require.NoError(t, err)
	settings(t, c, "1.0.0", "3")
	healthy(t, d)
}

// wipeKapp removes what kapp-controller made in a namespace: its Apps
// (finalizers first, so it does not uninstall into the next test) and the
// ConfigMaps kapp deployed or keeps its records in.
func wipeKapp(t *testing.T, c *kubetest.Cluster, namespace string) {
	t.Helper()
	ctx := context.Background()
	apps, err := c.Dyn.Resource(gvrApp).Namespace(namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, u := range apps.Items {
		u.SetFinalizers(nil)
		if _, err := c.Dyn.Resource(gvrApp).Namespace(namespace).Update(ctx, &u, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
		if err := c.Dyn.Resource(gvrApp).Namespace(namespace).Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
	}
	require.NoError(t, c.Kube.CoreV1().ConfigMaps(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}))
}

// valuesSecrets names the values Secrets the driver made in the namespace.
func valuesSecrets(t *testing.T, c *kubetest.Cluster) []string {
	t.Helper()
	list, err := c.Kube.CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "vcfsm.dev/part=values"})
	require.NoError(t, err)
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

// A change of only a SupervisorService's values is not Healthy on
// kapp-controller's verdict about the old values: the values Secret is
// named by the values, so the PackageInstall's spec and generation move,
// and every Healthy read finds the PackageInstall observed at the
// generation the apply wrote and the new values deployed. The old values
// Secret goes; going back to the old values names the old Secret again.
func TestValuesChangeIsNotHealthyBeforeKappDeploysIt(t *testing.T) {
	cs := testClusters(t)
	d := newDriver(t, cs)
	ctx := context.Background()
	c := cs["sv1"]
	image := pushArcturus(t, bundletest.NewRegistry(t), "1.0.0", arcturusTemplate)
	install(t, d, image)
	healthy(t, d)
	settings(t, c, "1.0.0", "3")
	want := target.Desired{Key: ssKey, Namespace: ns, Spec: ssDoc("1.0.0", image), Owner: owner1, Finalizers: []string{"services.vcfa.broadcom.com/cleanup"}}
	pis := c.Dyn.Resource(gvrPI).Namespace(ns)

	for _, replicas := range []string{"5", "3"} {
		values := "replicas: " + replicas + "\n"
		pi, err := pis.Get(ctx, "arcturus-registry.example.com", metav1.GetOptions{})
		require.NoError(t, err)
		before := pi.GetGeneration()
		_, err = d.Apply(ctx, valuesSecret(values))
		require.NoError(t, err)
		obj, err := d.Apply(ctx, want)
		require.NoError(t, err)
		require.NotEqual(t, target.StatusHealthy, obj.Status, "kapp-controller has not deployed %q yet: %s", values, obj.Message)
		pi, err = pis.Get(ctx, "arcturus-registry.example.com", metav1.GetOptions{})
		require.NoError(t, err)
		require.Greater(t, pi.GetGeneration(), before, "a values change is a PackageInstall spec change")
		wrote := pi.GetGeneration()

		reconciled(t, "Healthy with "+values, func() (target.Object, error) { return d.Get(ctx, ssKey) }, func(o target.Object) bool {
			if o.Status != target.StatusHealthy {
				return false
			}
			cm, err := c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "arcturus-settings", metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, replicas, cm.Data["replicas"], "Healthy only once kapp-controller deployed the new values")
			pi, err := pis.Get(ctx, "arcturus-registry.example.com", metav1.GetOptions{})
			require.NoError(t, err)
			observed, _, _ := unstructured.NestedInt64(pi.Object, "status", "observedGeneration")
			require.GreaterOrEqual(t, observed, wrote, "Healthy only for the generation the apply wrote")
			return true
		})
		name := kubernetes.ValuesSecretName("arcturus-registry.example.com", []byte(values))
		require.Equal(t, []string{name}, valuesSecrets(t, c), "only the values Secret in use is left")
		ref, _, _ := unstructured.NestedSlice(pi.Object, "spec", "values")
		require.Equal(t, name, mapOf(mapOf(ref[0])["secretRef"])["name"])
	}

	// A Transfer rebuilds the parts from the values selected now: when
	// they changed, the Secret the PackageInstall no longer names goes too.
	_, err := d.Apply(ctx, valuesSecret("replicas: 7\n"))
	require.NoError(t, err)
	_, err = d.Transfer(ctx, ssKey, target.Owner{ServiceID: owner1.ServiceID, Version: "1.1.0"}, want.Finalizers)
	require.NoError(t, err)
	require.Equal(t, []string{kubernetes.ValuesSecretName("arcturus-registry.example.com", []byte("replicas: 7\n"))}, valuesSecrets(t, c))
	settings(t, c, "1.0.0", "7")
	healthy(t, d)
	deleteWaitsForKapp(t, d, c)
}
