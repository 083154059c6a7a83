package vcfsm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// The project's own end-to-end bundle, "arcturus", modelled on the real
// example bundle: a multi-region transpiler, Starlark helpers, a library
// file, template.replace, a SupervisorService per region, a GlobalRole, an
// optional service account and right bundle, a Secret and a UI plugin.
const arcturusName = "arcturus.galaxy.com"

const valuesYML = `#@data/values
#@overlay/match-child-defaults missing_ok=True
---
regions: []
hookCA: ""
`

const transpilerYML = `#@ load("@ytt:data", "data")

#@ def regions():
#@   out = []
#@   for r in data.values.regions:
#@     if len(r.supervisors) == 0:
#@       continue
#@     end
#@     out.append({
#@       "name": r.name,
#@       "hostSupervisor": {"name": r.supervisors[0].name, "storageClass": r.supervisors[0].defaultStorageClass},
#@       "clientSupervisors": [s.name for s in r.supervisors],
#@     })
#@   end
#@   return out
#@ end
---
regions: #@ regions()
`

const libStar = `def resource_name(prefix, region):
    return prefix + "-" + region["name"]
end

def documents(data, server_func, singleton_func):
    docs = []
    for doc in singleton_func():
        docs.append(doc)
    end
    for region in data.values.regions:
        for doc in server_func(region):
            docs.append(doc)
        end
    end
    return docs
end
`

// serverLib is filled with a version's knobs.
const serverLib = `#@ load("@ytt:data", "data")

#@ def singleton():
#@   docs = [{
#@     "apiVersion": "services.vcfa.broadcom.com/v2",
#@     "kind": "GlobalRole",
#@     "metadata": {"labels": {"services.vcfa.broadcom.com/name": "arcturus-admin"}},
#@     "spec": {"name": "Arcturus Administrator", "rights": %[1]s, "scope": {"allTenants": True}},
#@   }]
#@   if %[2]s:
#@     docs.append({
#@       "apiVersion": "services.vcfa.broadcom.com/v2",
#@       "kind": "VcfaServiceAccount",
#@       "metadata": {"labels": {"services.vcfa.broadcom.com/name": "arcturus-sa"}},
#@       "spec": {"clientName": "arcturus-service-account", "roleName": "Arcturus Administrator",
#@                "selector": {"kind": "Secret", "labels": {"service-account": "arcturus-service-account"}}},
#@     })
#@   end
#@   if %[3]s:
#@     docs.append({
#@       "apiVersion": "services.vcfa.broadcom.com/v2",
#@       "kind": "RightBundle",
#@       "metadata": {"labels": {"services.vcfa.broadcom.com/name": "arcturus-rights"}},
#@       "spec": {"name": "arcturusRightsBundle", "rights": ["broadcom:arcturusProject: View"], "scope": {"allTenants": True}},
#@     })
#@   end
#@   if data.values.hookCA != "":
#@     docs.append({
#@       "apiVersion": "v1",
#@       "kind": "Secret",
#@       "metadata": {"name": "hook-ca", "labels": {"services.vcfa.broadcom.com/name": "hook-ca"}},
#@       "stringData": {"ca.crt": data.values.hookCA},
#@     })
#@   end
#@   if data.values.__system.uiplugin1 != "":
#@     docs.append({
#@       "apiVersion": "services.vcfa.broadcom.com/v2",
#@       "kind": "UserInterfacePlugin",
#@       "metadata": {"labels": {"services.vcfa.broadcom.com/name": "arcturus-ui"}},
#@       "spec": {"image": data.values.__system.uiplugin1, "enabled": True, "scope": {"allTenants": True}},
#@     })
#@   end
#@   return docs
#@ end

#@ def server(region):
#@   ss = data.values.__system.supervisorService
#@   return [{
#@     "apiVersion": "services.vcfa.broadcom.com/v2",
#@     "kind": "SupervisorService",
#@     "metadata": {"labels": {"services.vcfa.broadcom.com/name": "arcturus-install",
#@                             "services.vcfa.broadcom.com/link-region": region["name"]}},
#@     "spec": {
#@       "region": region["name"],
#@       "supervisor": region["hostSupervisor"]["name"],
#@       "package": ss["package"],
#@       "packageMetadata": ss["packageMetadata"],
#@       "access": [{"type": "VSPHERE_POD", "managementService": "vcf-depot"}],
#@       "readyConditions": [{"name": "externalIp", "supervisorSelector": {"kind": "Service", "labels": {"app": "arcturus"}, "path": "status.loadBalancer.ingress[0].ip"}}],
#@     },
#@   }]
#@ end
`

const vcfServiceYML = `#@ load("@ytt:data", "data")
#@ load("@ytt:template", "template")
#@ load("lib.star", "documents")
#@ load("server.lib.yml", "server", "singleton")

#@ template.replace(documents(data, server, singleton))
`

// arcturusVersion is one version's knobs.
type arcturusVersion struct {
	Version        string
	SSVersion      string // the SupervisorService package version it installs
	Rights         []string
	ServiceAccount bool
	RightBundle    bool
	Annotations    map[string]string
	K8sConstraint  string
	// PluginVCFA is the plugin manifest's vcfaVersion constraint; empty
	// means no UI plugin.
	PluginVCFA string
	// SSTemplate, when set, replaces the SupervisorService package's
	// ConfigMap template (config/settings.yml).
	SSTemplate string
}

func (v arcturusVersion) spec() bundletest.BundleSpec {
	rights, _ := json.Marshal(v.Rights)
	py := func(b bool) string {
		if b {
			return "True"
		}
		return "False"
	}
	return bundletest.BundleSpec{
		Name: arcturusName, Version: v.Version, DisplayName: "Arcturus", ProviderName: "Broadcom",
		Annotations: v.Annotations, KubernetesVersionConstraints: v.K8sConstraint,
		ValuesSchema: map[string]any{
			"title": "arcturus values schema",
			"properties": map[string]any{
				"regions": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
				"hookCA":  map[string]any{"type": "string", "default": ""},
			},
		},
		ConfigFiles: map[string]string{
			"values.yml":      valuesYML,
			"lib.star":        libStar,
			"server.lib.yml":  fmt.Sprintf(serverLib, rights, py(v.ServiceAccount), py(v.RightBundle)),
			"vcf-service.yml": vcfServiceYML,
		},
		ValuesFiles: map[string]string{"transpiler.yml": transpilerYML},
	}
}

// world is a running all-in-one with a registry, a tarball server and a
// two-region inventory.
type world struct {
	box  *onebox.Box
	reg  *bundletest.Registry
	tars *bundletest.TarServer
	sim  *simulator.Simulator
	// schemaPatch, when set, edits the next published values schema.
	schemaPatch func(map[string]any)
	// specPatch, when set, edits every published bundle spec.
	specPatch func(*bundletest.BundleSpec)
}

const inventoryYAML = `
regions:
  - name: us-west-1
    storageClasses: [gold]
    supervisors:
      - name: supervisor-vc1
        id: domain-c8
        version: 9.0.0.0
        kubernetesVersion: v1.30.2+vmware.1
        defaultStorageClass: gold
        vcenterName: vcenter1.example.com
  - name: eu-central-1
    storageClasses: [gold]
    supervisors:
      - name: supervisor-eu1
        id: domain-c20
        version: 9.1.0.0
        kubernetesVersion: v1.31.1+vmware.2
        defaultStorageClass: gold
        vcenterName: vcenter2.example.com
`

func newWorld(t testing.TB, opts ...onebox.Option) *world {
	t.Helper()
	w := &world{reg: bundletest.NewRegistry(t), tars: bundletest.NewTarServer(t)}
	inv := filepath.Join(t.TempDir(), "inventory.yaml")
	require.NoError(t, os.WriteFile(inv, []byte(inventoryYAML), 0o600))
	base := []onebox.Option{func(c *app.Config) {
		c.Lifecycle.SourceRootCAs = w.tars.RootCAs()
		c.Lifecycle.InventoryFile = inv
		c.Lifecycle.ReconcileInterval = 50 * time.Millisecond
		c.Lifecycle.StepTimeout = 30 * time.Second
	}}
	w.box = onebox.Start(t, append(base, opts...)...)
	w.sim = w.box.Sys.Lifecycle().Simulator()
	return w
}

// publish builds a version's bundle, pushes it to the registry and offers
// it as a tarball; it returns the tarball URL.
func (w *world) publish(t testing.TB, v arcturusVersion) string {
	t.Helper()
	spec := v.spec()
	pkg := spec.Name
	if w.schemaPatch != nil {
		w.schemaPatch(spec.ValuesSchema)
	}
	if w.specPatch != nil {
		w.specPatch(&spec)
	}
	ssFiles := bundletest.SupervisorServiceFiles("arcturus-registry.example.com", v.SSVersion)
	if v.SSTemplate != "" {
		ssFiles["config/settings.yml"] = v.SSTemplate
	}
	ssImage := bundletest.PushPackageBundle(t, w.reg, "arcturus-registry:"+v.SSVersion, ssFiles)
	spec.Images = append(spec.Images, bundletest.BundleImage{Image: ssImage})
	spec.SystemValues = map[string]any{"supervisorService": bundletest.SupervisorServiceValues(ssImage, "arcturus-registry.example.com", v.SSVersion)}
	if v.PluginVCFA != "" {
		manifest, _ := json.Marshal(map[string]any{
			"urn": "urn:vmware:vcloud:plugin:arcturus", "name": "arcturus-ui", "version": v.Version, "vendor": "Broadcom",
			"containerVersion": "9.0.0", "module": "ArcturusModule", "route": "arcturus", "vcfaVersion": v.PluginVCFA,
			"scope": []string{"service-provider"},
		})
		img := bundletest.PushPluginImage(t, w.reg, "arcturus-ui:"+v.Version, manifest, true)
		spec.Images = append(spec.Images, bundletest.BundleImage{Image: img, SystemKey: "uiplugin1"})
	}
	dir := bundletest.NewBundleDir(t, spec)
	bundletest.PushBundle(t, w.reg, dir, "arcturus-bundle:"+v.Version)
	tar := bundletest.CopyToTar(t, w.reg, w.reg.Ref("arcturus-bundle:"+v.Version))
	name := "arcturus-" + v.Version + ".tar"
	if spec.Name != pkg {
		// Another package at the same version has its own source: the
		// catalog maps a source to one package name, and a create of the
		// same URL would be taken for the package downloaded first.
		name = spec.Name + "-" + v.Version + ".tar"
	}
	w.tars.Add(name, tar)
	return w.tars.URL(name)
}

// v2Grants are the access grants of v2-like versions (v2, ver(...)) with
// the test inventory: a RightBundle instead of v1's service account. An
// upgrade from v1 accepts them (acceptV2).
const v2Grants = `{"Supervisor":{"ManagementService":["vcf-depot"]},"VCF Automation":{"GlobalRole":["Arcturus Administrator"],"RightBundle":["arcturusRightsBundle"]}}`

// acceptV2 is what a PATCH upgrading v1 to a v2-like version adds: its
// access grants differ, so the request accepts them.
const acceptV2 = `,"accepted":{"eula":true,"signatures":true,"accessGrants":` + v2Grants + `}`

var v1 = arcturusVersion{Version: "1.0.0", SSVersion: "1.0.0", Rights: []string{"RIGHT_ORGANIZATION_VIEW"}, ServiceAccount: true, PluginVCFA: ">=9.0"}

// poll calls get until ok holds or the deadline passes.
func poll[T any](t testing.TB, what string, timeout time.Duration, get func() T, ok func(T) bool) T {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last T
	for {
		last = get()
		if ok(last) {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last: %+v", timeout, what, last)
		}
		select {
		case <-time.After(25 * time.Millisecond):
		case <-context.Background().Done():
		}
	}
}

// svcView is the subset of VcfServiceWithExtras the tests read.
type svcView struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Version        string            `json:"version"`
	Vendor         string            `json:"vendor"`
	Status         string            `json:"status"`
	LifecycleState string            `json:"lifecycleState"`
	Phase          string            `json:"phase"`
	Revision       string            `json:"revision"`
	Labels         map[string]string `json:"labels"`
	Namespace      string            `json:"namespace"`
	Available      string            `json:"availableUpgrade"`
	State          *stateView        `json:"state"`
	Metadata       map[string]any    `json:"metadata"`
	PackageData    *string           `json:"packageData"`
	Signatures     map[string]any    `json:"signatures"`
	Values         map[string]string `json:"values"`
}

type stateView struct {
	Resources []struct {
		Type, Name, Namespace, Status, Message, LastModified, Supervisor, OwnerVersion string
		Finalizers                                                                     []string
		ResourceYaml                                                                   string `json:"resourceYaml"`
	} `json:"resources"`
	ErrorDetails []struct {
		Type, Severity, Message string
	} `json:"errorDetails"`
	PreCheckStatus string `json:"preCheckStatus"`
	ResourceChecks []struct {
		Type, Name, Status string
		Checks             []struct{ Name, Status, Message string }
	} `json:"resourceChecks"`
	Operation *struct {
		Type, Step, Message, Outcome string
		Percent                      int
	} `json:"operation"`
	OrphanedResources []struct{ Type, Name, Message string } `json:"orphanedResources"`
}

func (w *world) get(t testing.TB, id string) svcView {
	t.Helper()
	resp := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"?state=true", nil)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var v svcView
	resp.JSON(t, &v)
	return v
}

func (w *world) waitStatus(t testing.TB, id string, want ...string) svcView {
	t.Helper()
	return poll(t, "status "+strings.Join(want, "|")+" of "+id, 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		for _, s := range want {
			if v.Status == s {
				return true
			}
		}
		return false
	})
}

func (w *world) create(t testing.TB, source string) string {
	t.Helper()
	resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services", map[string]any{"source": source})
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var v svcView
	resp.JSON(t, &v)
	return v.ID
}

// activate accepts what render-access-grants says and activates.
func (w *world) activate(t testing.TB, id string) {
	t.Helper()
	w.activateWith(t, id, w.grants(t, id))
}

// grants is what render-access-grants answers for the service.
func (w *world) grants(t testing.TB, id string) []byte {
	t.Helper()
	inv := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/inventory", nil)
	require.Equal(t, http.StatusOK, inv.Status, "%s", inv.Body)
	grants := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/render-access-grants", []byte(`{"inventory": `+string(inv.Body)+`}`))
	require.Equal(t, http.StatusOK, grants.Status, "%s", grants.Body)
	return grants.Body
}

// activateWith sends the activating PATCH accepting grants.
func (w *world) activateWith(t testing.TB, id string, grants []byte) {
	t.Helper()
	resp := w.box.Do(t, http.MethodPatch, "/v2/vcf-services/"+id, []byte(`{"lifecycleState":"active","accepted":{"eula":true,"signatures":true,"accessGrants":`+string(grants)+`}}`))
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
}

func (w *world) installed(t testing.TB, source string) string {
	t.Helper()
	id := w.create(t, source)
	w.waitStatus(t, id, "Unresolved")
	w.activate(t, id)
	v := w.waitStatus(t, id, "Healthy", "Unhealthy")
	require.Equal(t, "Healthy", v.Status, "state: %+v", v.State)
	return id
}
