package vcfctl_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
)

// The bundle fixture is a copy of services/vcfsm's end-to-end bundle
// ("arcturus"): real ytt templates that render a GlobalRole, an optional
// service account and right bundle, and a SupervisorService per region.

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
	// Name is the package name; empty means arcturus.galaxy.com.
	Name           string
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
}

func (v arcturusVersion) name() string {
	if v.Name == "" {
		return arcturusName
	}
	return v.Name
}

// repo is the registry repository and tarball prefix of the version.
func (v arcturusVersion) repo() string {
	if v.Name == "" {
		return "arcturus"
	}
	return strings.ReplaceAll(v.Name, ".", "-")
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
		Name: v.name(), Version: v.Version, DisplayName: "Arcturus", ProviderName: "Broadcom",
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
