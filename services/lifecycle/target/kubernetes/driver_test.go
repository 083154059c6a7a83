package kubernetes_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes/kubetest"
)

func cutSlash(s string) (string, string, bool) { return strings.Cut(s, "/") }

func mapOf(v any) map[string]any { m, _ := v.(map[string]any); return m }

func decode(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	return string(b)
}

// eventually polls until ok or the deadline.
func eventually[T any](t *testing.T, what string, get func() (T, error), ok func(T) bool) T {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		v, err := get()
		if err == nil && ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last: %+v, %v", what, v, err)
		}
		<-time.After(20 * time.Millisecond)
	}
}

const ns = "svc-arcturus-galaxy-com"

var (
	owner1 = target.Owner{ServiceID: "urn:vcloud:entity:broadcom:vcfService:1111", Version: "1.0.0"}
	ssKey  = target.Key{System: target.SystemSupervisor, Scope: "sv1", Kind: "SupervisorService", Identity: "arcturus-registry.example.com"}
	valKey = target.Key{System: target.SystemSupervisor, Scope: "sv1", Kind: "Secret", Identity: ns + "/arcturus-install"}
)

// ssDoc is the SupervisorService of arcturus at version, whose package is
// the bundle at image. Its readyCondition reads the ConfigMap the package
// deploys.
func ssDoc(version, image string) map[string]any {
	return map[string]any{
		"apiVersion": "services.vcfa.broadcom.com/v2", "kind": "SupervisorService",
		"metadata": map[string]any{"labels": map[string]any{"services.vcfa.broadcom.com/name": "arcturus-install"}},
		"spec": map[string]any{
			"supervisor": "sv1",
			"package": map[string]any{"apiVersion": "data.packaging.carvel.dev/v1alpha1", "kind": "Package",
				"metadata": map[string]any{"name": "arcturus-registry.example.com." + version},
				"spec": map[string]any{"refName": "arcturus-registry.example.com", "version": version,
					"template": map[string]any{"spec": map[string]any{
						"fetch": []any{map[string]any{"imgpkgBundle": map[string]any{"image": image}}},
						"template": []any{map[string]any{"ytt": map[string]any{"paths": []any{"config/"}}},
							map[string]any{"kbld": map[string]any{"paths": []any{"-", ".imgpkg/images.yml"}}}},
						"deploy": []any{map[string]any{"kapp": map[string]any{}}}}}}},
			"packageMetadata": map[string]any{"apiVersion": "data.packaging.carvel.dev/v1alpha1", "kind": "PackageMetadata",
				"metadata": map[string]any{"name": "arcturus-registry.example.com"},
				"spec":     map[string]any{"displayName": "Arcturus registry"}},
			"values": map[string]any{"selector": map[string]any{"kind": "Secret",
				"labels": map[string]any{"services.vcfa.broadcom.com/context": "install"}, "path": "data.values"}},
			"readyConditions": []any{map[string]any{"name": "endpoint",
				"supervisorSelector": map[string]any{"kind": "ConfigMap", "name": "arcturus-settings", "path": "data.endpoint"}}},
		},
	}
}

func newDriver(t *testing.T, cs map[string]*kubetest.Cluster) *kubernetes.Driver {
	t.Helper()
	wipe(t, cs)
	d := kubernetes.New(kubernetes.Config{RESTConfig: restConfigs(cs)})
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// valuesSecret is the Secret the SupervisorService's values selector
// picks, holding values.
func valuesSecret(values string) target.Desired {
	return target.Desired{Key: valKey, Namespace: ns, Owner: owner1, Spec: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "arcturus-install", "labels": map[string]any{"services.vcfa.broadcom.com/context": "install"}},
		"stringData": map[string]any{"values": values}}}
}

// A SupervisorService on a real API server with kapp-controller: its
// objects with owners and the finalizer, values through the selector;
// kapp-controller fetches the package from the registry, renders the
// values and deploys its ConfigMap; health from the PackageInstall's
// conditions and a readyCondition on the deployed ConfigMap; a values
// change and an upgrade reach the ConfigMap; the downgrade is refused; a
// delete waits for kapp-controller to uninstall.
func TestSupervisorService(t *testing.T) {
	cs := testClusters(t)
	d := newDriver(t, cs)
	ctx := context.Background()
	c := cs["sv1"]
	reg := bundletest.NewRegistry(t)
	v1, v2 := pushArcturus(t, reg, "1.0.0", arcturusTemplate), pushArcturus(t, reg, "2.0.0", arcturusTemplate)
	want := target.Desired{Key: ssKey, Namespace: ns, Spec: ssDoc("1.0.0", v1), Owner: owner1, Finalizers: []string{"services.vcfa.broadcom.com/cleanup"}}

	obj, err := d.Apply(ctx, want)
	require.NoError(t, err)
	require.Equal(t, target.StatusBusy, obj.Status)
	require.Contains(t, obj.Message, "values Secret")
	_, err = d.Get(ctx, ssKey)
	require.ErrorIs(t, err, target.ErrNotFound, "no PackageInstall before its values exist")

	_, err = d.Apply(ctx, valuesSecret("replicas: 3\n"))
	require.NoError(t, err)
	_, err = d.Apply(ctx, want)
	require.NoError(t, err)

	namespace, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "vcfsm", namespace.Labels[kubernetes.LabelManagedBy])
	pi, err := c.Dyn.Resource(gvrPI).Namespace(ns).Get(ctx, "arcturus-registry.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, owner1.ServiceID, pi.GetAnnotations()[kubernetes.AnnotationServiceID])
	require.Equal(t, "1.0.0", pi.GetAnnotations()[kubernetes.AnnotationOwnerVersion])
	require.Contains(t, pi.GetFinalizers(), "services.vcfa.broadcom.com/cleanup")
	ref, _, _ := unstructured.NestedString(pi.Object, "spec", "packageRef", "versionSelection", "constraints")
	require.Equal(t, "1.0.0", ref)
	for _, gvr := range []schema.GroupVersionResource{gvrPkg, gvrPkgm} {
		list, err := c.Dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, list.Items, 1, gvr.Resource)
		require.Equal(t, owner1.ServiceID, list.Items[0].GetAnnotations()[kubernetes.AnnotationServiceID])
	}
	values, err := c.Kube.CoreV1().Secrets(ns).Get(ctx, kubernetes.ValuesSecretName("arcturus-registry.example.com", []byte("replicas: 3\n")), metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "replicas: 3\n", string(values.Data["values.yaml"]))

	got := healthy(t, d)
	require.Equal(t, map[string]string{"endpoint": "https://arcturus.example.com"}, got.ReadyConditions)
	require.Equal(t, ssDoc("1.0.0", v1), got.Spec)
	settings(t, c, "1.0.0", "3")
	pi, err = c.Dyn.Resource(gvrPI).Namespace(ns).Get(ctx, "arcturus-registry.example.com", metav1.GetOptions{})
	require.NoError(t, err)
	require.Contains(t, pi.GetFinalizers(), kappFinalizer, "kapp-controller holds the PackageInstall until it uninstalled")

	// A values change is rendered again by kapp-controller.
	_, err = d.Apply(ctx, valuesSecret("replicas: 5\n"))
	require.NoError(t, err)
	_, err = d.Apply(ctx, want)
	require.NoError(t, err)
	settings(t, c, "1.0.0", "5")
	healthy(t, d)

	// An upgrade moves the deployed ConfigMap to the new package's.
	want.Spec = ssDoc("2.0.0", v2)
	_, err = d.Apply(ctx, want)
	require.NoError(t, err)
	settings(t, c, "2.0.0", "5")
	got = healthy(t, d)
	require.Equal(t, ssDoc("2.0.0", v2), got.Spec)
	installedVersion(t, c, "2.0.0")

	// kapp-controller cannot downgrade: an older version is refused.
	_, err = d.Apply(ctx, target.Desired{Key: ssKey, Namespace: ns, Spec: ssDoc("1.0.0", v1), Owner: owner1})
	require.ErrorIs(t, err, target.ErrIncompatible)
	require.Contains(t, err.Error(), "cannot be downgraded")
	require.Contains(t, err.Error(), "restore data from a backup")

	deleteWaitsForKapp(t, d, c)
}

// deleteWaitsForKapp: kapp-controller's finalizer holds the delete until
// it uninstalled the package (its ConfigMap is gone); then the parts are
// cleaned up and the Service Manager's finalizer goes.
func deleteWaitsForKapp(t *testing.T, d *kubernetes.Driver, c *kubetest.Cluster) {
	t.Helper()
	ctx := context.Background()
	err := d.Delete(ctx, ssKey)
	require.ErrorContains(t, err, "waiting for finalizers "+kappFinalizer)
	reconciled(t, "kapp-controller to uninstall the package", func() (bool, error) { return d.Delete(ctx, ssKey) == nil, nil },
		func(done bool) bool { return done })
	_, err = c.Kube.CoreV1().ConfigMaps(ns).Get(ctx, "arcturus-settings", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "kapp-controller deleted what it deployed: %v", err)
	_, err = d.Get(ctx, ssKey)
	require.ErrorIs(t, err, target.ErrNotFound)
	for _, gvr := range []schema.GroupVersionResource{gvrPkg, gvrPkgm} {
		list, err := c.Dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, list.Items, "the delete cleaned up %s", gvr.Resource)
	}
	require.Empty(t, valuesSecrets(t, c), "the values Secret is cleaned up")
}

// Stage is a server-side dry run: the API server's validation (here
// kapp-controller's own Package name rule, through its aggregated API) is
// the answer, and nothing is created.
func TestStageIsServerSideDryRun(t *testing.T) {
	cs := testClusters(t)
	d := newDriver(t, cs)
	ctx := context.Background()
	st, err := d.Stage(ctx, target.Desired{Key: ssKey, Namespace: ns, Spec: ssDoc("1.0.0", "registry.example.com/arcturus@sha256:0123"), Owner: owner1})
	require.NoError(t, err)
	require.True(t, st.Reachable)
	require.False(t, st.Rejected, st.Message)
	require.Contains(t, st.Message, "dry run")
	require.Equal(t, kubernetes.DefaultRequest, st.Requested)

	bad := ssDoc("1.0.0", "registry.example.com/arcturus@sha256:0123")
	mapOf(mapOf(mapOf(bad["spec"])["package"])["metadata"])["name"] = "arcturus-registry.example.com.9.9.9"
	st, err = d.Stage(ctx, target.Desired{Key: ssKey, Namespace: ns, Spec: bad, Owner: owner1})
	require.NoError(t, err)
	require.True(t, st.Reachable)
	require.True(t, st.Rejected)
	require.Contains(t, st.Message, "metadata.name: Invalid value: \"arcturus-registry.example.com.9.9.9\": must be <spec.refName> + '.' + <spec.version>",
		"kapp-controller's aggregated API validates the Package")

	list, err := cs["sv1"].Dyn.Resource(gvrPkg).Namespace("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, list.Items, "staging creates nothing")

	st, err = d.Stage(ctx, target.Desired{Key: target.Key{System: target.SystemSupervisor, Scope: "sv9", Kind: "SupervisorService", Identity: "x"}, Spec: ssDoc("1.0.0", "registry.example.com/arcturus@sha256:0123")})
	require.NoError(t, err)
	require.False(t, st.Reachable)
	require.Contains(t, st.Message, "sv9")
}

// Drift: someone edits or deletes an owned object; the informers report
// the owning service, Get reports the drift and Apply corrects it. A
// Service appearing in the namespace is reported as well.
func TestDriftIsWatchedAndCorrected(t *testing.T) {
	cs := testClusters(t)
	d := newDriver(t, cs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	changed := map[string]int{}
	require.NoError(t, d.Watch(ctx, func(id string) {
		mu.Lock()
		defer mu.Unlock()
		changed[id]++
	}))
	count := func() (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return changed[owner1.ServiceID], nil
	}
	want := target.Desired{Key: valKey, Namespace: ns, Owner: owner1, Finalizers: []string{"services.vcfa.broadcom.com/cleanup"},
		Spec: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "arcturus-install"}, "stringData": map[string]any{"values": "a: 1\n"}}}
	_, err := d.Apply(ctx, want)
	require.NoError(t, err)
	c := cs["sv1"].Kube.CoreV1().Secrets(ns)

	s, err := c.Get(ctx, "arcturus-install", metav1.GetOptions{})
	require.NoError(t, err)
	s.Data["values"] = []byte("a: 2\n")
	_, err = c.Update(ctx, s, metav1.UpdateOptions{})
	require.NoError(t, err)
	eventually(t, "the edit to be reported", count, func(n int) bool { return n >= 1 })
	got, err := d.Get(ctx, valKey)
	require.NoError(t, err)
	require.NotEqual(t, want.Spec, got.Spec, "Get reports the drift")
	require.Contains(t, got.Message, "data was changed on the cluster")
	obj, err := d.Apply(ctx, want)
	require.NoError(t, err)
	require.Contains(t, obj.Message, "took back fields")
	s, err = c.Get(ctx, "arcturus-install", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "a: 1\n", string(s.Data["values"]))

	// A Service in the service's namespace (what readyConditions select)
	// is reported too, though the Service Manager does not own it.
	before, _ := count()
	_, err = cs["sv1"].Kube.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "arcturus-lb"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 443}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, "the Service to be reported", count, func(n int) bool { return n > before })

	before, _ = count()
	require.NoError(t, c.Delete(ctx, "arcturus-install", metav1.DeleteOptions{}))
	eventually(t, "the delete to be reported", count, func(n int) bool { return n > before })
	_, err = d.Apply(ctx, want)
	require.NoError(t, err)
	s, err = c.Get(ctx, "arcturus-install", metav1.GetOptions{})
	require.NoError(t, err)
	require.Nil(t, s.DeletionTimestamp, "the deleted Secret was created again")
	require.Equal(t, "a: 1\n", string(s.Data["values"]))
}

// Facts come from the cluster: /version, discovery, node allocatable or
// a labelled ResourceQuota.
func TestFacts(t *testing.T) {
	cs := testClusters(t)
	d := newDriver(t, cs)
	ctx := context.Background()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-facts"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}}}
	_, err := cs["sv2"].Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs["sv2"].Kube.CoreV1().Nodes().Delete(context.Background(), "worker-facts", metav1.DeleteOptions{})
	})

	f, err := d.Facts(ctx, []string{"sv2", "sv9"})
	require.NoError(t, err)
	require.Len(t, f.Supervisors, 2)
	sv2 := f.Supervisors[0]
	require.True(t, sv2.Reachable)
	require.Equal(t, "v"+kubetest.KubeVersion, strings.SplitN(sv2.KubernetesVersion, "-", 2)[0])
	require.Contains(t, sv2.SupportedAPIs, "services.vcfa.broadcom.com/v2/SupervisorService", "kapp-controller's APIs are served")
	require.Contains(t, sv2.SupportedAPIs, "v1/Secret")
	require.Equal(t, target.Quota{CPUMillicores: 8000, MemoryBytes: 32 << 30, StorageBytes: 100 << 30}, sv2.Available)
	require.False(t, f.Supervisors[1].Reachable)

}

// A Supervisor without a kubeconfig is unreachable, naming the file; with
// one in --kubeconfig-dir it is reached; the inventory's kubeconfig wins.
func TestKubeconfigDir(t *testing.T) {
	cs := testClusters(t)
	wipe(t, cs)
	dir := t.TempDir()
	d := kubernetes.New(kubernetes.Config{KubeconfigDir: dir})
	t.Cleanup(func() { _ = d.Close() })
	ctx := context.Background()
	_, err := d.Get(ctx, valKey)
	require.ErrorIs(t, err, target.ErrUnreachable)
	require.Contains(t, err.Error(), filepath.Join(dir, "sv1.kubeconfig"))

	require.NoError(t, cs["sv1"].WriteKubeconfig(filepath.Join(dir, "sv1.kubeconfig")))
	d2 := kubernetes.New(kubernetes.Config{KubeconfigDir: dir})
	t.Cleanup(func() { _ = d2.Close() })
	_, err = d2.Get(ctx, valKey)
	require.ErrorIs(t, err, target.ErrNotFound, "reached sv1 through its kubeconfig")

	// The inventory's kubeconfig field wins over the directory.
	elsewhere := filepath.Join(t.TempDir(), "sv2-admin.yaml")
	require.NoError(t, cs["sv2"].WriteKubeconfig(elsewhere))
	d3 := kubernetes.New(kubernetes.Config{KubeconfigDir: dir, KubeconfigFor: func(sup string) string {
		if sup == "sv1" {
			return elsewhere
		}
		return ""
	}})
	t.Cleanup(func() { _ = d3.Close() })
	_, err = d3.Apply(ctx, target.Desired{Key: valKey, Namespace: ns, Owner: owner1, Spec: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "arcturus-install"}, "stringData": map[string]any{"a": "b"}}})
	require.NoError(t, err)
	_, err = cs["sv2"].Kube.CoreV1().Secrets(ns).Get(ctx, "arcturus-install", metav1.GetOptions{})
	require.NoError(t, err, "Supervisor sv1 was reached through the inventory's kubeconfig (here: cluster sv2)")
	_, err = os.Stat(filepath.Join(dir, "sv1.kubeconfig"))
	require.NoError(t, err)
}
