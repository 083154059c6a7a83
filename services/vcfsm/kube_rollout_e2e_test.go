package vcfsm_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes/kubetest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// loadBalancer creates a LoadBalancer Service in the service's namespace,
// as the package's users would reach it, and gives it ip as the cluster's
// load balancer would; with ip "" it stays pending (no address left).
func loadBalancer(t *testing.T, c *kubetest.Cluster, name, ip string) {
	t.Helper()
	ctx := context.Background()
	svcs := c.Kube.CoreV1().Services(kubeNS)
	s, err := svcs.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 443}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	if ip == "" {
		return
	}
	s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	_, err = svcs.UpdateStatus(ctx, s, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// withDashboard is withValues plus a second readyCondition: the version
// also serves a dashboard behind its own load balancer, and is ready on a
// Supervisor only once that has an address.
func withDashboard(spec *bundletest.BundleSpec) {
	withValues(spec)
	lib := spec.ConfigFiles["server.lib.yml"]
	spec.ConfigFiles["server.lib.yml"] = strings.Replace(lib, `"path": "status.loadBalancer.ingress[0].ip"}}],`,
		`"path": "status.loadBalancer.ingress[0].ip"}}, {"name": "dashboardIp", "supervisorSelector": {"kind": "Service", "name": "arcturus-dashboard", "path": "status.loadBalancer.ingress[0].ip"}}],`, 1)
}

// piOn reads the SupervisorService's PackageInstall (its anchor) on sup.
func (w *kubeWorld) piOn(t *testing.T, sup string) *unstructured.Unstructured {
	t.Helper()
	pi, err := w.clusters[sup].Dyn.Resource(gvrPI).Namespace(kubeNS).Get(context.Background(), kubePI, metav1.GetOptions{})
	require.NoError(t, err)
	return pi
}

// ownedAt requires every object the driver made of the service on sup to
// be owned by version: the PackageInstall, its Package, PackageMetadata
// and values Secret, and the service's Secrets.
func (w *kubeWorld) ownedAt(t *testing.T, sup, version string) {
	t.Helper()
	ctx := context.Background()
	c := w.clusters[sup]
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		name string
	}{{gvrPI, kubePI}, {gvrPkg, kubePI + ".1.0.0"}, {gvrPkgm, kubePI}} {
		u, err := c.Dyn.Resource(o.gvr).Namespace(kubeNS).Get(ctx, o.name, metav1.GetOptions{})
		require.NoError(t, err, "%s %s on %s", o.gvr.Resource, o.name, sup)
		require.Equal(t, version, u.GetAnnotations()[kubernetes.AnnotationOwnerVersion], "%s %s on %s", o.gvr.Resource, o.name, sup)
	}
	values, err := c.Kube.CoreV1().Secrets(kubeNS).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelPart + "=values"})
	require.NoError(t, err)
	require.Len(t, values.Items, 1, "one values Secret on %s: the one the PackageInstall uses", sup)
	for _, name := range []string{values.Items[0].Name, "arcturus-values-us-west-1", "arcturus-values-eu-central-1"} {
		s, err := c.Kube.CoreV1().Secrets(kubeNS).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err, "Secret %s on %s", name, sup)
		require.Equal(t, version, s.Annotations[kubernetes.AnnotationOwnerVersion], "Secret %s on %s", name, sup)
	}
}

// A 2-wave rollout over the two API servers — supervisor-vc1 (us-west-1)
// first, then the rest (supervisor-eu1) — of a version that is ready only
// once its dashboard's load balancer has an address: vc1's has one,
// eu1's load balancer never gives one, so eu1 is not Healthy at the new
// version within the gate timeout and wave 2 fails past its budget of 0.
// The rollout rolls back eu1, then vc1, and quarantines the version. On
// vc1 the objects the first wave moved are back at the old version: the
// PackageInstall carries the old document again (written anew: its
// generation moved on), and every object is owned by 1.0.0.
func TestKubernetesRolloutRollsBackFirstWave(t *testing.T) {
	// Rollouts look at the API servers every 250 ms (not the simulator
	// tests' 20 ms: every look reads the live objects).
	w := newKubeWorld(t, func(c *app.Config) { c.Lifecycle.RolloutPoll = 250 * time.Millisecond })
	id := w.create(t, w.publish(t, v1))
	w.registered(t, id)
	w.activate(t, id)
	regions := map[string]string{"supervisor-vc1": "us-west-1", "supervisor-eu1": "eu-central-1"}
	for sup, region := range regions {
		w.deployed(t, sup, "1.0.0", region)
	}
	loadBalancer(t, w.clusters["supervisor-vc1"], "arcturus", "192.0.2.10")
	loadBalancer(t, w.clusters["supervisor-eu1"], "arcturus", "192.0.2.20")
	require.Equal(t, "1.0.0", w.settled(t, id, "Healthy").Version)
	before := w.piOn(t, "supervisor-vc1").GetAnnotations()
	require.NotContains(t, before[kubernetes.AnnotationDesired], "dashboardIp")

	// The new version's dashboard: vc1's load balancer gives it an
	// address, eu1's has none left.
	loadBalancer(t, w.clusters["supervisor-vc1"], "arcturus-dashboard", "192.0.2.11")
	loadBalancer(t, w.clusters["supervisor-eu1"], "arcturus-dashboard", "")
	w.specPatch = withDashboard
	next := v2
	next.SSVersion = "1.0.0" // the same package: kapp-controller could not take it back from a newer one
	src2 := w.publish(t, next)
	strategy := `{"gateTimeout":"60s","waves":[{"name":"canary","regions":["us-west-1"]},{"name":"rest","rest":true}]}`
	patch(t, w.world, id, `{"source":"`+src2+`"`+acceptV2+`,"rollout":{"strategy":`+strategy+`}}`, http.StatusAccepted)

	// Wave 1 moved vc1: its PackageInstall holds the new document, owned by
	// 2.0.0, while wave 2 waits for eu1.
	poll(t, "wave 1 done on supervisor-vc1", 3*time.Minute, func() rolloutView { return w.rollout(t, id) }, func(r rolloutView) bool {
		v, st := r.target("supervisor-vc1")
		return v == "2.0.0" && st == "Done"
	})
	moved := w.piOn(t, "supervisor-vc1").GetAnnotations()
	require.Equal(t, "2.0.0", moved[kubernetes.AnnotationOwnerVersion])
	require.Contains(t, moved[kubernetes.AnnotationDesired], "dashboardIp", "the new version's document on the first wave's API server")
	require.Greater(t, generation(t, moved), generation(t, before))

	r := poll(t, "the rollout rolled back", 4*time.Minute, func() rolloutView { return w.rollout(t, id) }, func(r rolloutView) bool {
		return r.State == "RolledBack" || r.State == "RollbackRefused" || r.State == "Succeeded"
	})
	require.Equal(t, "RolledBack", r.State, "%+v", r)
	require.Contains(t, r.Reason, "wave rest: 1 of 1 target(s) failed, more than its budget of 0")
	require.Contains(t, r.Reason, "supervisor-eu1")
	require.Contains(t, r.Reason, "dashboardIp", "eu1 failed on the dashboard's readyCondition")
	for sup := range regions {
		v, st := r.target(sup)
		require.Equal(t, []string{"1.0.0", "RolledBack"}, []string{v, st}, sup)
	}
	w.rolledBackInOrder(t, id)

	// The first wave's API server: the old document again, owned by 1.0.0.
	back := w.piOn(t, "supervisor-vc1").GetAnnotations()
	require.JSONEq(t, before[kubernetes.AnnotationDesired], back[kubernetes.AnnotationDesired], "the old version's document on supervisor-vc1")
	require.Greater(t, generation(t, back), generation(t, moved), "written back, not left")
	for sup, region := range regions {
		w.ownedAt(t, sup, "1.0.0")
		w.deployed(t, sup, "1.0.0", region)
	}
	require.Equal(t, "1.0.0", w.settled(t, id, "Healthy").Version)

	versions := w.box.Do(t, http.MethodGet, "/v2/vcf-service-versions?name="+arcturusName, nil)
	require.Equal(t, http.StatusOK, versions.Status, "%s", versions.Body)
	require.Contains(t, string(versions.Body), `"quarantine"`, "2.0.0 is quarantined")
	require.Contains(t, string(versions.Body), r.OperationID, "the quarantine names the rollout")
	refused := w.box.Do(t, http.MethodPatch, "/v2/vcf-services/"+id, []byte(`{"source":"`+src2+`"`+acceptV2+`}`))
	require.Equal(t, http.StatusBadRequest, refused.Status, "%s", refused.Body)
	require.Contains(t, string(refused.Body), "quarantined")
}

// generation is the driver's generation annotation on an anchor.
func generation(t *testing.T, ann map[string]string) int {
	t.Helper()
	var g int
	_, err := fmt.Sscan(ann[kubernetes.AnnotationGeneration], &g)
	require.NoError(t, err, "annotation %s", kubernetes.AnnotationGeneration)
	return g
}

// rolledBackInOrder: the rollout's history shows wave 2 rolled back
// before wave 1 started rolling back.
func (w *kubeWorld) rolledBackInOrder(t *testing.T, id string) {
	t.Helper()
	h := w.history(t, id)
	found := false
	for _, op := range h.Operations {
		if op.Type != "rollout" {
			continue
		}
		found = true
		require.Equal(t, "RolledBack", op.Outcome)
		var names []string
		for _, s := range op.Steps {
			names = append(names, s.Name+":"+s.Status)
		}
		require.Equal(t, []string{"download:Succeeded", "configuration:Succeeded", "plan:Succeeded", "maintenance:Succeeded",
			"wave-1:Succeeded", "wave-2:Succeeded", "promote:Skipped", "rollback-wave-2:Succeeded", "rollback-wave-1:Succeeded", "rolled-back:Succeeded"}, names)
	}
	require.True(t, found, "the rollout is in the history")
}
