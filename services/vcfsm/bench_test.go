package vcfsm_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// A bundle rendering, on every Supervisor of every region (the
// transpiler's clientSupervisors), one SupervisorService and a number of
// SupervisorRegistries: 50 regions × 1 Supervisor × 10 = 500 resources,
// 100 regions × 10 Supervisors × 5 = 5,000.
const scaleServer = `#@ load("@ytt:data", "data")

#@ def singleton():
#@   return []
#@ end

#@ def server(region):
#@   ss = data.values.__system.supervisorService
#@   docs = []
#@   for sv in region["clientSupervisors"]:
#@     docs.append({
#@       "apiVersion": "services.vcfa.broadcom.com/v2",
#@       "kind": "SupervisorService",
#@       "metadata": {"labels": {"services.vcfa.broadcom.com/name": "scale-install"}},
#@       "spec": {"region": region["name"], "supervisor": sv,
#@                "package": ss["package"], "packageMetadata": ss["packageMetadata"]},
#@     })
#@     for i in range(%[1]d):
#@       docs.append({
#@         "apiVersion": "services.vcfa.broadcom.com/v2",
#@         "kind": "SupervisorRegistry",
#@         "metadata": {"labels": {"services.vcfa.broadcom.com/name": "registry-%%d" %% (i + %[2]d)}},
#@         "spec": {"region": region["name"], "supervisor": sv,
#@                  "endpoint": "registry-%%d.%[3]s.example.com:5000" %% (i + %[2]d), "username": "%[4]s"},
#@       })
#@     end
#@   end
#@   return docs
#@ end
`

// scaleVersion: registries numbered from offset; domain is part of their
// endpoints (their identity on the Supervisor), user a plain setting.
func scaleVersion(version string, registries, offset int, domain, user string) bundletest.BundleSpec {
	v := arcturusVersion{Version: version, SSVersion: "1.0.0"}
	spec := v.spec()
	spec.Name = "scale.example.com"
	spec.ConfigFiles["server.lib.yml"] = fmt.Sprintf(scaleServer, registries, offset, domain, user)
	return spec
}

// scaleInventory is regions × perRegion Supervisors, named sv-00, sv-01…
// across regions.
func scaleInventory(regions, perRegion int) string {
	var b strings.Builder
	b.WriteString("regions:\n")
	for i := range regions {
		fmt.Fprintf(&b, "  - name: region-%02d\n    storageClasses: [gold]\n    supervisors:\n", i)
		for j := range perRegion {
			n := i*perRegion + j
			fmt.Fprintf(&b, "      - {name: sv-%02d, id: domain-c%d, version: 9.0.0.0, kubernetesVersion: v1.30.2, defaultStorageClass: gold, vcenterName: vc.example.com}\n", n, n)
		}
	}
	return b.String()
}

type scaleWorld struct {
	*world
	sources []string
}

// newScaleWorld: an all-in-one over regions × perRegion Supervisors with
// the versions published.
func newScaleWorld(b testing.TB, regions, perRegion int, versions ...bundletest.BundleSpec) *scaleWorld {
	return newScaleWorldWith(b, regions, perRegion, nil, versions...)
}

// newScaleWorldWith also applies opts to the all-in-one's configuration.
func newScaleWorldWith(b testing.TB, regions, perRegion int, opts []onebox.Option, versions ...bundletest.BundleSpec) *scaleWorld {
	inv := filepath.Join(b.TempDir(), "inventory.yaml")
	require.NoError(b, os.WriteFile(inv, []byte(scaleInventory(regions, perRegion)), 0o600))
	w := &world{reg: bundletest.NewRegistry(b), tars: bundletest.NewTarServer(b)}
	w.box = onebox.Start(b, append([]onebox.Option{func(c *app.Config) {
		c.Lifecycle.SourceRootCAs = w.tars.RootCAs()
		c.Lifecycle.InventoryFile = inv
		c.Lifecycle.ReconcileInterval = time.Second
	}}, opts...)...)
	w.sim = w.box.Sys.Lifecycle().Simulator()
	return &scaleWorld{world: w, sources: publishScale(b, w, versions...)}
}

// publishScale publishes the scale bundle's versions (with their
// SupervisorService image) on w's registry and tarball server, returning
// their sources in order.
func publishScale(b testing.TB, w *world, versions ...bundletest.BundleSpec) []string {
	var sources []string
	ssImage := bundletest.PushSupervisorServiceBundle(b, w.reg, "scale-ss:1.0.0", "scale-ss.example.com", "1.0.0")
	for _, spec := range versions {
		spec.Images = []bundletest.BundleImage{{Image: ssImage}}
		spec.SystemValues = map[string]any{"supervisorService": bundletest.SupervisorServiceValues(ssImage, "scale-ss.example.com", "1.0.0")}
		dir := bundletest.NewBundleDir(b, spec)
		bundletest.PushBundle(b, w.reg, dir, "scale:"+spec.Version)
		tar := bundletest.CopyToTar(b, w.reg, w.reg.Ref("scale:"+spec.Version))
		w.tars.Add("scale-"+spec.Version+".tar", tar)
		sources = append(sources, w.tars.URL("scale-"+spec.Version+".tar"))
	}
	return sources
}

// waitWatch blocks until the service reaches status (and version).
func (w *world) remove(tb testing.TB, id string) {
	resp := w.box.Do(tb, http.MethodDelete, "/v2/vcf-services/"+id, nil)
	require.Equal(tb, http.StatusAccepted, resp.Status, "%s", resp.Body)
	poll(tb, "deletion", 2*time.Minute, func() int {
		return w.box.Do(tb, http.MethodGet, "/v2/vcf-services/"+id, nil).Status
	}, func(s int) bool { return s == http.StatusNotFound })
}

func (w *world) waitWatch(tb testing.TB, ctx context.Context, events <-chan event, status, version string) {
	for ev := range events {
		if ev.Status == status && (version == "" || ev.Version == version) {
			return
		}
	}
	tb.Fatalf("watch ended before %s %s", status, version)
}

// Activating 500 resources across 50 simulated Supervisors, from the
// PATCH to Healthy.
// scaleUpgrade: registries 3..8 are shared and get a new username
// (reconfigured), 0..2 are removed, 9..11 new; the SupervisorService is
// unchanged. Per Supervisor 1 unchanged, 6 reconfigured, 3 removed, 3 new.
var scaleUpgrade = []bundletest.BundleSpec{
	scaleVersion("1.0.0", 9, 0, "a", "admin"),
	scaleVersion("2.0.0", 9, 3, "a", "operator"),
}

func BenchmarkActivate500Resources50Supervisors(b *testing.B) {
	w := newScaleWorld(b, 50, 1, scaleUpgrade...)
	for range b.N {
		b.StopTimer()
		id := w.create(b, w.sources[0])
		w.waitStatus(b, id, "Unresolved")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		events := w.watch(b, ctx, id)
		b.StartTimer()
		w.activate(b, id)
		w.waitWatch(b, ctx, events, "Healthy", "")
		b.StopTimer()
		cancel()
		v := w.get(b, id)
		require.Len(b, v.State.Resources, 500)
		w.remove(b, id)
		b.StartTimer()
	}
}

// Upgrading the same service: 150 new, 150 decommissioned, 300
// reconfigured, 50 unchanged resources across 50 Supervisors.
func BenchmarkUpgrade500Resources50Supervisors(b *testing.B) {
	w := newScaleWorld(b, 50, 1, scaleUpgrade...)
	for range b.N {
		b.StopTimer()
		id := w.create(b, w.sources[0])
		w.waitStatus(b, id, "Unresolved")
		w.activate(b, id)
		if v := w.waitStatus(b, id, "Healthy", "Unhealthy"); v.Status != "Healthy" {
			b.Fatalf("activation: %+v", v.State.ErrorDetails)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		events := w.watch(b, ctx, id)
		b.StartTimer()
		resp := w.box.Do(b, http.MethodPatch, "/v2/vcf-services/"+id, []byte(`{"source":"`+w.sources[1]+`"}`))
		require.Equal(b, http.StatusAccepted, resp.Status, "%s", resp.Body)
		w.waitWatch(b, ctx, events, "Healthy", "2.0.0")
		b.StopTimer()
		cancel()
		v := w.get(b, id)
		require.Len(b, v.State.Resources, 500)
		for _, r := range v.State.Resources {
			require.Equal(b, "2.0.0", r.OwnerVersion)
		}
		w.remove(b, id)
		b.StartTimer()
	}
}

// A resource whose target identity changes (a registry's endpoint) is a
// new target object: the old one is decommissioned, nothing is left
// behind, and deleting the service leaves the targets empty.
func TestUpgradeReplacesRetargetedResources(t *testing.T) {
	w := newScaleWorld(t, 2, 1, scaleVersion("1.0.0", 9, 0, "a", "admin"), scaleVersion("2.0.0", 9, 3, "b", "admin"))
	id := w.create(t, w.sources[0])
	w.waitStatus(t, id, "Unresolved")
	w.activate(t, id)
	w.waitStatus(t, id, "Healthy")
	patch(t, w.world, id, `{"source":"`+w.sources[1]+`"}`, http.StatusAccepted)
	poll(t, "the upgrade", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Version == "2.0.0" && v.Status == "Healthy"
	})
	objs, err := w.box.Sys.Lifecycle().Simulator().List(context.Background(), "")
	require.NoError(t, err)
	require.Len(t, objs, 20, "2 Supervisors × (1 SupervisorService + 9 registries)")
	for _, o := range objs {
		require.Equal(t, "2.0.0", o.Owner.Version, "%s", o.Key)
		require.NotContains(t, o.Identity, ".a.example.com", "the old endpoint was decommissioned")
	}
	w.remove(t, id)
	objs, err = w.box.Sys.Lifecycle().Simulator().List(context.Background(), "")
	require.NoError(t, err)
	require.Empty(t, objs)
}
