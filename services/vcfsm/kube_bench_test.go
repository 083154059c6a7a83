package vcfsm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/kubernetes/kubetest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// kubeScaleServer: 99 Secrets (each on both Supervisors) and one
// SupervisorService per region: 200 resources on two API servers.
const kubeScaleServer = `#@ load("@ytt:data", "data")

#@ def singleton():
#@   docs = []
#@   for i in range(%d):
#@     docs.append({"apiVersion": "v1", "kind": "Secret",
#@       "metadata": {"name": "scale-%%d" %% i, "labels": {"services.vcfa.broadcom.com/name": "scale-%%d" %% i}},
#@       "stringData": {"index": str(i)}})
#@   end
#@   return docs
#@ end

#@ def server(region):
#@   ss = data.values.__system.supervisorService
#@   return [{
#@     "apiVersion": "services.vcfa.broadcom.com/v2",
#@     "kind": "SupervisorService",
#@     "metadata": {"labels": {"services.vcfa.broadcom.com/name": "scale-install"}},
#@     "spec": {"region": region["name"], "supervisor": region["hostSupervisor"]["name"],
#@              "package": ss["package"], "packageMetadata": ss["packageMetadata"]},
#@   }]
#@ end
`

// Activating 200 resources across two real API servers (198 Secrets, two
// SupervisorServices that kapp-controller installs on each), from the
// PATCH to Healthy.
func BenchmarkActivate200ResourcesKubernetes(b *testing.B) {
	dir := b.TempDir()
	var cs []*kubetest.Cluster
	for i := range 2 {
		c := kubetest.Start(b)
		require.NoError(b, c.WriteKubeconfig(filepath.Join(dir, fmt.Sprintf("sv-%02d.kubeconfig", i))))
		_, err := c.Kube.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"),
				corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("500Gi")}}}, metav1.CreateOptions{})
		require.NoError(b, err)
		cs = append(cs, c)
	}
	inv := filepath.Join(b.TempDir(), "inventory.yaml")
	require.NoError(b, os.WriteFile(inv, []byte(scaleInventory(2, 1)), 0o600))
	w := &world{reg: bundletest.NewRegistry(b), tars: bundletest.NewTarServer(b)}
	w.box = onebox.Start(b, func(c *app.Config) {
		c.Lifecycle.SourceRootCAs = w.tars.RootCAs()
		c.Lifecycle.InventoryFile = inv
		c.Lifecycle.ReconcileInterval = time.Second
		c.Lifecycle.TargetDriver = "kubernetes"
		c.Lifecycle.KubeconfigDir = dir
	})
	spec := arcturusVersion{Version: "1.0.0", SSVersion: "1.0.0"}.spec()
	spec.Name = "scale.example.com"
	spec.ConfigFiles["server.lib.yml"] = fmt.Sprintf(kubeScaleServer, 99)
	ssImage := bundletest.PushSupervisorServiceBundle(b, w.reg, "scale-ss:1.0.0", "scale-ss.example.com", "1.0.0")
	spec.Images = []bundletest.BundleImage{{Image: ssImage}}
	spec.SystemValues = map[string]any{"supervisorService": bundletest.SupervisorServiceValues(ssImage, "scale-ss.example.com", "1.0.0")}
	bundletest.PushBundle(b, w.reg, bundletest.NewBundleDir(b, spec), "scale:1.0.0")
	w.tars.Add("scale-1.0.0.tar", bundletest.CopyToTar(b, w.reg, w.reg.Ref("scale:1.0.0")))
	source := w.tars.URL("scale-1.0.0.tar")

	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		id := w.create(b, source)
		w.waitStatus(b, id, "Unresolved")
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		events := w.watch(b, wctx, id)
		b.StartTimer()
		w.activate(b, id)
		w.waitWatch(b, wctx, events, "Healthy", "")
		b.StopTimer()
		cancel()
		v := w.get(b, id)
		require.Len(b, v.State.Resources, 200)
		for _, c := range cs {
			secrets, err := c.Kube.CoreV1().Secrets("svc-scale-example-com").List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=vcfsm"})
			require.NoError(b, err)
			require.GreaterOrEqual(b, len(secrets.Items), 99, "the Secrets are on both clusters")
		}
		w.remove(b, id)
		b.StartTimer()
	}
}
