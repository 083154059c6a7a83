package vcfsm_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
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
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes/kubetest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

var (
	gvrPI   = schema.GroupVersionResource{Group: "packaging.carvel.dev", Version: "v1alpha1", Resource: "packageinstalls"}
	gvrPkg  = schema.GroupVersionResource{Group: "data.packaging.carvel.dev", Version: "v1alpha1", Resource: "packages"}
	gvrPkgm = schema.GroupVersionResource{Group: "data.packaging.carvel.dev", Version: "v1alpha1", Resource: "packagemetadatas"}
)

const (
	kubeNS     = "svc-arcturus-galaxy-com"
	kubePI     = "arcturus-registry.example.com"
	kappFinal  = "finalizers.packageinstall.packaging.carvel.dev/delete"
	cleanupFin = "services.vcfa.broadcom.com/cleanup"
)

// kubeWorld is a world whose Supervisors are two real API servers.
type kubeWorld struct {
	*world
	clusters map[string]*kubetest.Cluster
}

// withValues gives each region's SupervisorService a values Secret,
// selected by labels as element-types/supervisor-service.md shows.
func withValues(spec *bundletest.BundleSpec) {
	lib := spec.ConfigFiles["server.lib.yml"]
	lib = strings.Replace(lib, `#@       "readyConditions":`,
		`#@       "values": {"selector": {"kind": "Secret", "labels": {"services.vcfa.broadcom.com/context": "install", "services.vcfa.broadcom.com/link-region": region["name"]}, "path": "data.values"}},
#@       "readyConditions":`, 1)
	lib = strings.Replace(lib, `#@   }]
#@ end
`, `#@   }, {
#@     "apiVersion": "v1",
#@     "kind": "Secret",
#@     "metadata": {"name": "arcturus-values-" + region["name"], "labels": {"services.vcfa.broadcom.com/name": "arcturus-values-" + region["name"],
#@                  "services.vcfa.broadcom.com/context": "install", "services.vcfa.broadcom.com/link-region": region["name"]}},
#@     "stringData": {"values": "region: " + region["name"] + "\n"},
#@   }]
#@ end
`, 1)
	spec.ConfigFiles["server.lib.yml"] = lib
}

func newKubeWorld(t *testing.T, opts ...onebox.Option) *kubeWorld {
	t.Helper()
	dir := t.TempDir()
	cs := map[string]*kubetest.Cluster{}
	for _, name := range []string{"supervisor-vc1", "supervisor-eu1"} {
		c := kubetest.Start(t)
		require.NoError(t, c.WriteKubeconfig(filepath.Join(dir, name+".kubeconfig")))
		// API servers alone have no nodes: one gives the cluster capacity.
		_, err := c.Kube.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"),
				corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("500Gi")}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		cs[name] = c
	}
	w := newWorld(t, append([]onebox.Option{func(c *app.Config) {
		c.Lifecycle.TargetDriver = "kubernetes"
		c.Lifecycle.KubeconfigDir = dir
		// Long enough that a Healthy service is not re-read during the
		// test (every 15 periods): drift is noticed through the informers.
		c.Lifecycle.ReconcileInterval = 3 * time.Second
	}}, opts...)...)
	w.specPatch = withValues
	return &kubeWorld{world: w, clusters: cs}
}

// registered waits until the service is Unresolved and its register
// operation has ended: the status is written before the operation ends,
// and an activation between the two is refused as a concurrent change.
func (w *kubeWorld) registered(t *testing.T, id string) {
	t.Helper()
	w.waitStatus(t, id, "Unresolved")
	poll(t, "the register operation of "+id+" to end", time.Minute, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.State == nil || v.State.Operation == nil || v.State.Operation.Outcome != ""
	})
}

// settled waits for a status at kapp-controller's pace: it fetches the
// package, renders and deploys it on each Supervisor.
func (w *kubeWorld) settled(t *testing.T, id string, want string) svcView {
	t.Helper()
	return poll(t, "status "+want+" of "+id, 3*time.Minute, func() svcView { return w.get(t, id) },
		func(v svcView) bool { return v.Status == want })
}

// deployed waits until the ConfigMap kapp-controller deployed from the
// SupervisorService's package on sup holds version and region (the
// package renders the values the driver hands it).
func (w *kubeWorld) deployed(t *testing.T, sup, version, region string) {
	t.Helper()
	cms := w.clusters[sup].Kube.CoreV1().ConfigMaps(kubeNS)
	poll(t, "the package's ConfigMap on "+sup+" at "+version+" for "+region, 3*time.Minute, func() map[string]string {
		cm, err := cms.Get(context.Background(), kubePI, metav1.GetOptions{})
		if err != nil {
			return map[string]string{"error": err.Error()}
		}
		return cm.Data
	}, func(d map[string]string) bool { return d["version"] == version && d["region"] == region })
}

func waitFor[T any](t *testing.T, what string, get func() (T, error)) T {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	r := poll(t, what, 30*time.Second, func() res { v, err := get(); return res{v, err} }, func(r res) bool { return r.err == nil })
	return r.v
}

func (w *kubeWorld) resourceMessage(t *testing.T, id, supervisor string) string {
	t.Helper()
	for _, r := range w.get(t, id).State.Resources {
		if r.Type == "SupervisorService" && r.Supervisor == supervisor {
			return r.Status + ": " + r.Message
		}
	}
	return ""
}

// The all-in-one with --target-driver=kubernetes and two real API servers
// as its two Supervisors, each with kapp-controller: activation, what
// lands on each cluster, kapp-controller installing the package from the
// registry with each region's values, health from its conditions, a
// readyCondition, drift of Secrets and of what kapp-controller deployed,
// upgrade, the refused downgrade, delete honouring finalizers, force
// delete.
func TestKubernetesTargets(t *testing.T) {
	w := newKubeWorld(t)
	ctx := context.Background()
	id := w.create(t, w.publish(t, v1))
	w.registered(t, id)
	w.activate(t, id)

	// What lands on each cluster, with owner and finalizer.
	regions := map[string]string{"supervisor-vc1": "us-west-1", "supervisor-eu1": "eu-central-1"}
	for sup, region := range regions {
		c := w.clusters[sup]
		pi := waitFor(t, "the PackageInstall on "+sup, func() (*unstructured.Unstructured, error) {
			return c.Dyn.Resource(gvrPI).Namespace(kubeNS).Get(ctx, kubePI, metav1.GetOptions{})
		})
		require.Equal(t, id, pi.GetAnnotations()[kubernetes.AnnotationServiceID])
		require.Equal(t, "1.0.0", pi.GetAnnotations()[kubernetes.AnnotationOwnerVersion])
		require.Contains(t, pi.GetFinalizers(), cleanupFin)
		_, err := c.Dyn.Resource(gvrPkg).Namespace(kubeNS).Get(ctx, kubePI+".1.0.0", metav1.GetOptions{})
		require.NoError(t, err, "the Package on %s", sup)
		_, err = c.Dyn.Resource(gvrPkgm).Namespace(kubeNS).Get(ctx, kubePI, metav1.GetOptions{})
		require.NoError(t, err, "the PackageMetadata on %s", sup)
		values, err := c.Kube.CoreV1().Secrets(kubeNS).Get(ctx, kubernetes.ValuesSecretName(kubePI, []byte("region: "+region+"\n")), metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "region: "+region+"\n", string(values.Data["values.yaml"]), "values resolved through the selector")
		for _, r := range []string{"us-west-1", "eu-central-1"} {
			s, err := c.Kube.CoreV1().Secrets(kubeNS).Get(ctx, "arcturus-values-"+r, metav1.GetOptions{})
			require.NoError(t, err, "every Secret goes to every Supervisor")
			require.Equal(t, id, s.Annotations[kubernetes.AnnotationServiceID])
			require.Equal(t, []string{cleanupFin}, s.Finalizers)
		}
	}

	// kapp-controller fetches the package from the registry and deploys
	// it with the region's values; reconciled, the service is Busy until
	// the readyCondition's load-balancer IP exists.
	for sup, region := range regions {
		w.deployed(t, sup, "1.0.0", region)
	}
	poll(t, "waiting for the ready condition", 3*time.Minute, func() string { return w.resourceMessage(t, id, "supervisor-vc1") },
		func(m string) bool { return strings.Contains(m, "ready condition externalIp") })
	for i, sup := range []string{"supervisor-vc1", "supervisor-eu1"} {
		// The load balancer's part (no cloud provider runs here): the
		// Service and the address it gets.
		svcs := w.clusters[sup].Kube.CoreV1().Services(kubeNS)
		s, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "arcturus", Labels: map[string]string{"app": "arcturus"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}}}, metav1.CreateOptions{})
		require.NoError(t, err)
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: []string{"192.0.2.10", "192.0.2.20"}[i]}}
		_, err = svcs.UpdateStatus(ctx, s, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	w.settled(t, id, "Healthy")

	// Drift: an edited and a deleted Secret come back, event-driven (a
	// Healthy service is not re-read for 45 s).
	secrets := w.clusters["supervisor-eu1"].Kube.CoreV1().Secrets(kubeNS)
	s, err := secrets.Get(ctx, "arcturus-values-us-west-1", metav1.GetOptions{})
	require.NoError(t, err)
	s.Data["values"] = []byte("tampered")
	_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	require.NoError(t, err)
	poll(t, "the edited Secret corrected", 15*time.Second, func() string {
		s, err := secrets.Get(ctx, "arcturus-values-us-west-1", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return string(s.Data["values"])
	}, func(v string) bool { return v == "region: us-west-1\n" })
	require.NoError(t, secrets.Delete(ctx, "arcturus-values-eu-central-1", metav1.DeleteOptions{}))
	poll(t, "the deleted Secret recreated", 15*time.Second, func() *corev1.Secret {
		s, _ := secrets.Get(ctx, "arcturus-values-eu-central-1", metav1.GetOptions{})
		return s
	}, func(s *corev1.Secret) bool {
		return s != nil && s.DeletionTimestamp == nil && string(s.Data["values"]) == "region: eu-central-1\n"
	})
	w.waitStatus(t, id, "Healthy")
	w.packageDrift(t, id)
	w.pausedIsLeftAlone(t, id)

	w.upgradeAndRefusedRollback(t, id)
	w.deleteWithFinalizersThenForce(t, id)
}

// An upgrade to a newer SupervisorService package transfers ownership and
// finalizers; rolling back would downgrade it: refused with the seed's
// workaround.
func (w *kubeWorld) upgradeAndRefusedRollback(t *testing.T, id string) {
	ctx := context.Background()
	regions := map[string]string{"supervisor-vc1": "us-west-1", "supervisor-eu1": "eu-central-1"}
	newer := v2
	newer.SSVersion = "2.0.0"
	patch(t, w.world, id, `{"source":"`+w.publish(t, newer)+`"`+acceptV2+`}`, http.StatusAccepted)
	for _, sup := range []string{"supervisor-vc1", "supervisor-eu1"} {
		res := w.clusters[sup].Dyn.Resource(gvrPI).Namespace(kubeNS)
		poll(t, "the 2.0.0 PackageInstall on "+sup, 30*time.Second, func() string {
			pi, err := res.Get(ctx, kubePI, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			v, _, _ := unstructured.NestedString(pi.Object, "spec", "packageRef", "versionSelection", "constraints")
			return v
		}, func(v string) bool { return v == "2.0.0" })
		w.deployed(t, sup, "2.0.0", regions[sup])
	}
	v := w.settled(t, id, "Healthy")
	require.Equal(t, "2.0.0", v.Version)
	for _, sup := range []string{"supervisor-vc1", "supervisor-eu1"} {
		c := w.clusters[sup]
		pi, err := c.Dyn.Resource(gvrPI).Namespace(kubeNS).Get(ctx, kubePI, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "2.0.0", pi.GetAnnotations()[kubernetes.AnnotationOwnerVersion])
		require.Contains(t, pi.GetFinalizers(), cleanupFin)
		installed, _, _ := unstructured.NestedString(pi.Object, "status", "version")
		require.Equal(t, "2.0.0", installed, "kapp-controller installed 2.0.0")
		s, err := c.Kube.CoreV1().Secrets(kubeNS).Get(ctx, "arcturus-values-us-west-1", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "2.0.0", s.Annotations[kubernetes.AnnotationOwnerVersion], "an unchanged resource's ownership is transferred")
		require.Equal(t, []string{cleanupFin}, s.Finalizers)
	}
	resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{"targetVersion": "1.0.0"})
	require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
	for _, m := range []string{"cannot be downgraded", "delete the service completely", "reinstall the previous version", "restore data from a backup"} {
		require.Contains(t, string(resp.Body), m)
	}
}

// Delete waits for kapp-controller's finalizer: on supervisor-eu1
// kapp-controller uninstalls and the delete completes there; on
// supervisor-vc1 it cannot (the account the package installs as lost its
// rights), so its finalizer holds the PackageInstall. Force delete then
// cannot clean it up: it removes the Service Manager's finalizers and
// ownership at once, leaves the objects and reports them.
func (w *kubeWorld) deleteWithFinalizersThenForce(t *testing.T, id string) {
	ctx := context.Background()
	vc1 := w.clusters["supervisor-vc1"].Dyn.Resource(gvrPI).Namespace(kubeNS)
	require.NoError(t, w.clusters["supervisor-vc1"].Kube.RbacV1().RoleBindings(kubeNS).Delete(ctx, "vcfsm-installer", metav1.DeleteOptions{}))

	require.Equal(t, http.StatusAccepted, w.box.Do(t, http.MethodDelete, "/v2/vcf-services/"+id, nil).Status)
	v := poll(t, "the delete to wait for kapp-controller", 3*time.Minute, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.State != nil && v.State.Operation != nil && strings.Contains(v.State.Operation.Message, kappFinal)
	})
	require.Equal(t, "Deleting", v.Phase)
	eu1 := w.clusters["supervisor-eu1"]
	poll(t, "supervisor-eu1 cleaned up", 3*time.Minute, func() int {
		l, err := eu1.Dyn.Resource(gvrPI).Namespace(kubeNS).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		p, err := eu1.Dyn.Resource(gvrPkg).Namespace(kubeNS).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		return len(l.Items) + len(p.Items)
	}, func(n int) bool { return n == 0 })
	_, err := eu1.Kube.CoreV1().ConfigMaps(kubeNS).Get(ctx, kubePI, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "kapp-controller uninstalled the package on supervisor-eu1: %v", err)
	pi, err := vc1.Get(ctx, kubePI, metav1.GetOptions{})
	require.NoError(t, err, "kapp-controller's finalizer holds the PackageInstall")
	require.NotNil(t, pi.GetDeletionTimestamp())

	require.Equal(t, http.StatusAccepted, w.box.Do(t, http.MethodDelete, "/v2/vcf-services/"+id+"?forceDelete=true", nil).Status)
	poll(t, "the forced deletion", 30*time.Second, func() int {
		return w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).Status
	}, func(s int) bool { return s == http.StatusNotFound })
	pi, err = vc1.Get(ctx, kubePI, metav1.GetOptions{})
	require.NoError(t, err, "force delete leaves the object")
	require.Equal(t, []string{kappFinal}, pi.GetFinalizers(), "the Service Manager's finalizer is gone, kapp-controller's stays")
	require.Empty(t, pi.GetAnnotations()[kubernetes.AnnotationServiceID], "no longer owned")
	_, err = w.clusters["supervisor-vc1"].Dyn.Resource(gvrPkg).Namespace(kubeNS).Get(ctx, kubePI+".2.0.0", metav1.GetOptions{})
	require.NoError(t, err, "force delete does not clean up what kapp-controller holds")
	hist := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	require.Contains(t, string(hist.Body), "orphaned SupervisorService arcturus-install")
	require.Contains(t, string(hist.Body), "supervisor-vc1")
	_, err = eu1.Kube.CoreV1().Secrets(kubeNS).Get(ctx, "arcturus-values-us-west-1", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the normal delete had cleaned up what it could: %v", err)
}

// packageDrift: the ConfigMap kapp-controller deployed from the package
// is edited, then deleted, behind the Service Manager's back; each time
// the service's state names it, and kapp-controller's reconcile (which
// the driver asks for) puts it back.
func (w *kubeWorld) packageDrift(t *testing.T, id string) {
	ctx := context.Background()
	cms := w.clusters["supervisor-vc1"].Kube.CoreV1().ConfigMaps(kubeNS)
	cm, err := cms.Get(ctx, kubePI, metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data["region"] = "tampered"
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	what := "ConfigMap " + kubeNS + "/" + kubePI + " deployed by kapp-controller from the package"
	poll(t, "the edit in the service's state", time.Minute, func() string { return w.resourceMessage(t, id, "supervisor-vc1") },
		func(m string) bool { return strings.Contains(m, what+": data was changed on the cluster") })
	w.deployed(t, "supervisor-vc1", "1.0.0", "us-west-1")
	w.settled(t, id, "Healthy")

	require.NoError(t, cms.Delete(ctx, kubePI, metav1.DeleteOptions{}))
	poll(t, "the delete in the service's state", time.Minute, func() string { return w.resourceMessage(t, id, "supervisor-vc1") },
		func(m string) bool { return strings.Contains(m, what+" was deleted on the cluster") })
	w.deployed(t, "supervisor-vc1", "1.0.0", "us-west-1")
	w.settled(t, id, "Healthy")
}

// A paused service's objects are left alone; resuming corrects them.
func (w *kubeWorld) pausedIsLeftAlone(t *testing.T, id string) {
	ctx := context.Background()
	patch(t, w.world, id, `{"lifecycleState":"paused"}`, http.StatusAccepted)
	secrets := w.clusters["supervisor-vc1"].Kube.CoreV1().Secrets(kubeNS)
	s, err := secrets.Get(ctx, "arcturus-values-eu-central-1", metav1.GetOptions{})
	require.NoError(t, err)
	s.Data["values"] = []byte("edited while paused")
	_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	require.NoError(t, err)
	values := func() string {
		s, err := secrets.Get(ctx, "arcturus-values-eu-central-1", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return string(s.Data["values"])
	}
	require.Never(t, func() bool { return values() != "edited while paused" }, 3*time.Second, 100*time.Millisecond, "a paused service's objects are left alone")
	patch(t, w.world, id, `{"lifecycleState":"active"}`, http.StatusAccepted)
	poll(t, "the edit corrected after resuming", 15*time.Second, values, func(v string) bool { return v == "region: eu-central-1\n" })
	w.waitStatus(t, id, "Healthy")
}

// The pre-checks stage on the API servers: a Package kapp-controller's
// aggregated API refuses (its name is not <refName>.<version>) fails the
// Staging check with kapp-controller's own message, and nothing is
// applied.
func TestKubernetesDryRunBlocksActivation(t *testing.T) {
	w := newKubeWorld(t)
	w.specPatch = func(spec *bundletest.BundleSpec) {
		lib := spec.ConfigFiles["server.lib.yml"]
		spec.ConfigFiles["server.lib.yml"] = strings.Replace(lib, `"package": ss["package"],`,
			`"package": {"apiVersion": "data.packaging.carvel.dev/v1alpha1", "kind": "Package", "metadata": {"name": "arcturus-registry.example.com.9.9.9"}, "spec": ss["package"]["spec"]},`, 1)
	}
	id := w.create(t, w.publish(t, v1))
	w.registered(t, id)
	w.activate(t, id)
	v := w.waitStatus(t, id, "Unhealthy")
	require.Equal(t, "inactive", v.LifecycleState, "the activation did not happen")
	require.Equal(t, "Failed", v.State.PreCheckStatus)
	found := false
	for _, rc := range v.State.ResourceChecks {
		for _, c := range rc.Checks {
			if rc.Type == "SupervisorService" && c.Name == "Staging" && c.Status == "Failed" &&
				strings.Contains(c.Message, "must be <spec.refName> + '.' + <spec.version>") {
				found = true
			}
		}
	}
	require.True(t, found, "the Staging check carries the API server's refusal: %+v", v.State.ResourceChecks)
	for sup, c := range w.clusters {
		l, err := c.Dyn.Resource(gvrPkg).Namespace("").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Empty(t, l.Items, "nothing was applied on %s", sup)
	}
	w.templateError(t, id)
}

// templateError: a SupervisorService package whose template ytt cannot
// render is activated; kapp-controller reports ReconcileFailed and its
// message reaches the service's state.errorDetails.
func (w *kubeWorld) templateError(t *testing.T, refused string) {
	require.Equal(t, http.StatusAccepted, w.box.Do(t, http.MethodDelete, "/v2/vcf-services/"+refused, nil).Status)
	poll(t, "the refused service deleted", time.Minute, func() int {
		return w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+refused, nil).Status
	}, func(s int) bool { return s == http.StatusNotFound })
	w.specPatch = withValues
	broken := v1
	broken.SSTemplate = `#@ load("@ytt:data", "data")
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: arcturus-registry.example.com
data:
  region: #@ data.values.no_such_value
`
	id := w.create(t, w.publish(t, broken))
	w.registered(t, id)
	w.activate(t, id)
	v := w.settled(t, id, "Unhealthy")
	found := false
	for _, d := range v.State.ErrorDetails {
		found = found || strings.Contains(d.Message, "no_such_value")
	}
	require.True(t, found, "kapp-controller's ytt error is in errorDetails: %+v", v.State.ErrorDetails)
	// The message is kapp-controller's, on each Supervisor (one may be
	// retrying its failed reconcile when the service turns Unhealthy).
	for sup, c := range w.clusters {
		poll(t, "kapp-controller's usefulErrorMessage on "+sup, 3*time.Minute, func() string {
			pi, err := c.Dyn.Resource(gvrPI).Namespace(kubeNS).Get(context.Background(), kubePI, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			useful, _, _ := unstructured.NestedString(pi.Object, "status", "usefulErrorMessage")
			return useful
		}, func(m string) bool { return strings.Contains(m, "no_such_value") })
	}
}
