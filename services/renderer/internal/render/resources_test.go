package render

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

// docsBundle renders the given YAML documents as they are.
func docsBundle(docs string) *commonv1.Bundle {
	return bundleOf("sha256:docs", map[string]string{"config/resources.yml": docs})
}

func renderDocs(t *testing.T, docs string) (*rendererv1.RenderResourcesResponse, error) {
	t.Helper()
	return newTestEngine(t).RenderResources(context.Background(), &rendererv1.RenderResourcesRequest{Bundle: docsBundle(docs)})
}

func element(kind, name string) string {
	return fmt.Sprintf("apiVersion: services.vcfa.broadcom.com/v2\nkind: %s\nmetadata:\n  labels:\n    services.vcfa.broadcom.com/name: %s\n", kind, name)
}

func TestEveryServiceKindIsAllowed(t *testing.T) {
	for _, kind := range serviceKinds {
		t.Run(kind, func(t *testing.T) {
			resp, err := renderDocs(t, element(kind, "x-"+strings.ToLower(kind)))
			require.NoError(t, err)
			require.Len(t, resp.GetResources(), 1)
			r := resp.GetResources()[0]
			require.Equal(t, kind, r.GetKind())
			require.Equal(t, ServicesAPIVersion, r.GetApiVersion())
			require.Equal(t, "x-"+strings.ToLower(kind), r.GetName())
		})
	}
}

// Rows are the rules of filesystem-layout.md's "Config Template
// Conventions" and element-types-overview.md's "CR Identification".
func TestResourceRules(t *testing.T) {
	notAllowed := func(i int, kind, apiVersion string) string {
		return fmt.Sprintf(`config: documents[%d]: kind %q (apiVersion %q) is not allowed: a VCF Service renders only services.vcfa.broadcom.com/v2 kinds (%s) and v1 Secret`,
			i, kind, apiVersion, strings.Join(serviceKinds, ", "))
	}
	for _, tc := range []struct {
		name  string
		docs  string
		names []string
		want  string
	}{
		{
			name: "a Deployment is rejected by name",
			docs: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n",
			want: notAllowed(0, "Deployment", "apps/v1"),
		},
		{
			name: "a ConfigMap is rejected",
			docs: element("GlobalRole", "admin") + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n",
			want: notAllowed(1, "ConfigMap", "v1"),
		},
		{
			name: "a service kind needs its API version",
			docs: "apiVersion: services.vcfa.broadcom.com/v1\nkind: GlobalRole\n",
			want: notAllowed(0, "GlobalRole", "services.vcfa.broadcom.com/v1"),
		},
		{
			name: "an unknown kind of the API group is rejected",
			docs: element("Database", "db"),
			want: notAllowed(0, "Database", ServicesAPIVersion),
		},
		{
			name: "a document without kind is rejected",
			docs: "just: values\n",
			want: notAllowed(0, "", ""),
		},
		{
			name: "a list document is rejected",
			docs: "- a\n- b\n",
			want: "config: documents[0]: expected a resource (a map), got array",
		},
		{
			name: "an element without the name label is rejected",
			docs: "apiVersion: services.vcfa.broadcom.com/v2\nkind: Role\nmetadata:\n  name: not-enough\n",
			want: "config: documents[0]: Role has no services.vcfa.broadcom.com/name label: element resources are identified by it (element-types-overview.md)",
		},
		{
			name:  "a Secret is named by its label first",
			docs:  "apiVersion: v1\nkind: Secret\nmetadata:\n  name: plain\n  labels:\n    services.vcfa.broadcom.com/name: labelled\n",
			names: []string{"labelled"},
		},
		{
			name:  "then by metadata.name",
			docs:  "apiVersion: v1\nkind: Secret\nmetadata:\n  name: plain\n  generateName: gen-\n",
			names: []string{"plain"},
		},
		{
			name:  "then by generateName",
			docs:  "apiVersion: v1\nkind: Secret\nmetadata:\n  generateName: gen-\n",
			names: []string{"gen-"},
		},
		{
			name: "a Secret without any name is rejected",
			docs: "apiVersion: v1\nkind: Secret\nstringData: {a: b}\n",
			want: "config: documents[0]: Secret has no services.vcfa.broadcom.com/name label, metadata.name or metadata.generateName",
		},
		{
			name: "names are unique per kind and supervisor",
			docs: element("SupervisorService", "svc") + "spec:\n  region: r1\n  supervisor: s1\n---\n" + element("SupervisorService", "svc") + "spec:\n  region: r1\n  supervisor: s1\n",
			want: `config: documents[1]: SupervisorService "svc" on supervisor "s1" of region "r1" duplicates documents[0]: names must be unique per kind, region and supervisor`,
		},
		{
			name:  "the same name on other supervisors, regions or kinds is fine",
			docs:  element("SupervisorService", "svc") + "spec:\n  region: r1\n  supervisor: s1\n---\n" + element("SupervisorService", "svc") + "spec:\n  region: r1\n  supervisor: s2\n---\n" + element("SupervisorService", "svc") + "spec:\n  region: r2\n  supervisor: s1\n---\n" + element("SupervisorRegistry", "svc") + "spec:\n  region: r1\n  supervisor: s1\n",
			names: []string{"svc", "svc", "svc", "svc"},
		},
		{
			name: "singleton names are unique",
			docs: element("GlobalRole", "admin") + "---\n" + element("GlobalRole", "admin"),
			want: `config: documents[1]: GlobalRole "admin" duplicates documents[0]: names must be unique per kind, region and supervisor`,
		},
		{
			name: "label values are strings",
			docs: "apiVersion: services.vcfa.broadcom.com/v2\nkind: Role\nmetadata:\n  labels:\n    services.vcfa.broadcom.com/name: r\n    tier: 3\n",
			want: `config: documents[0].metadata.labels: label "tier" is integer; label values are strings (quote it)`,
		},
		{
			name: "every violation is reported",
			docs: "apiVersion: apps/v1\nkind: Deployment\n---\nkind: Role\napiVersion: services.vcfa.broadcom.com/v2\n",
			want: notAllowed(0, "Deployment", "apps/v1") + "; documents[1]: Role has no services.vcfa.broadcom.com/name label: element resources are identified by it (element-types-overview.md)",
		},
		{
			name:  "empty documents are not resources",
			docs:  "---\n---\n" + element("Role", "r"),
			names: []string{"r"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := renderDocs(t, tc.docs)
			if tc.want != "" {
				require.ErrorIs(t, err, ErrInvalidInput)
				require.Equal(t, tc.want, err.Error())
				return
			}
			require.NoError(t, err)
			var names []string
			for _, r := range resp.GetResources() {
				names = append(names, r.GetName())
			}
			require.Equal(t, tc.names, names)
		})
	}
}

func TestResourceDescription(t *testing.T) {
	resp, err := renderDocs(t, "---\n"+element("SupervisorService", "svc")+"    services.vcfa.broadcom.com/overlay: install.r1\nspec:\n  region: r1\n  supervisor: s1\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  generateName: cfg-\n")
	require.NoError(t, err)
	require.Len(t, resp.GetResources(), 2)
	svc := resp.GetResources()[0]
	require.Equal(t, &commonv1.Resource{
		ApiVersion: ServicesAPIVersion,
		Kind:       "SupervisorService",
		Name:       "svc",
		Labels:     map[string]string{NameLabel: "svc", OverlayLabel: "install.r1"},
		Region:     "r1",
		Supervisor: "s1",
		Yaml:       []byte("apiVersion: services.vcfa.broadcom.com/v2\nkind: SupervisorService\nmetadata:\n  labels:\n    services.vcfa.broadcom.com/name: svc\n    services.vcfa.broadcom.com/overlay: install.r1\nspec:\n  region: r1\n  supervisor: s1\n"),
		Index:      0,
	}, svc)
	secret := resp.GetResources()[1]
	require.Equal(t, int32(1), secret.GetIndex())
	require.Equal(t, "cfg-", secret.GetName())
	require.Empty(t, secret.GetLabels())
	require.Equal(t, string(svc.GetYaml())+"---\n"+string(secret.GetYaml()), string(resp.GetYaml()))
}

// One row per line of api.md's AccessGrants schema, with the field
// element-types/*.md documents for it.
func TestAccessGrantRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		docs string
		want map[string]any
		err  string
	}{
		{
			name: "VcServiceAccount gives vCenter.Role from spec.roleName",
			docs: element("VcServiceAccount", "sa") + "spec:\n  username: svc\n  roleName: Arcturus Service Role\n",
			want: map[string]any{"vCenter": map[string]any{"Role": []any{"Arcturus Service Role"}}},
		},
		{
			name: "GlobalRole gives VCF Automation.GlobalRole from spec.name",
			docs: element("GlobalRole", "g") + "spec:\n  name: Arcturus Administrator\n",
			want: map[string]any{"VCF Automation": map[string]any{"GlobalRole": []any{"Arcturus Administrator"}}},
		},
		{
			name: "Role gives VCF Automation.Role from spec.name",
			docs: element("Role", "r") + "spec:\n  name: Arcturus Service Agent\n",
			want: map[string]any{"VCF Automation": map[string]any{"Role": []any{"Arcturus Service Agent"}}},
		},
		{
			name: "RightBundle gives VCF Automation.RightBundle from spec.name",
			docs: element("RightBundle", "rb") + "spec:\n  name: arcturusRightsBundle\n",
			want: map[string]any{"VCF Automation": map[string]any{"RightBundle": []any{"arcturusRightsBundle"}}},
		},
		{
			name: "RelyingParty gives VCF Automation.RelyingParty from spec.redirectUris",
			docs: element("RelyingParty", "rp") + "spec:\n  name: arcturus-relying-party\n  redirectUris:\n  - https://vcfa.example.com/arcturus/callback\n  - https://arcturus.example.com/c/oidc/callback\n",
			want: map[string]any{"VCF Automation": map[string]any{"RelyingParty": []any{"https://arcturus.example.com/c/oidc/callback", "https://vcfa.example.com/arcturus/callback"}}},
		},
		{
			name: "VcfaServiceAccount gives VCF Automation.VcfaServiceAccount from spec.clientName",
			docs: element("VcfaServiceAccount", "sa") + "spec:\n  name: Arcturus Service Account\n  clientName: arcturus-service-account\n",
			want: map[string]any{"VCF Automation": map[string]any{"VcfaServiceAccount": []any{"arcturus-service-account"}}},
		},
		{
			name: "ApiExtensionProxy gives VCF Automation.ApiExtensionProxy from spec.name",
			docs: element("ApiExtensionProxy", "p") + "spec:\n  name: ArcturusUIProxy\n",
			want: map[string]any{"VCF Automation": map[string]any{"ApiExtensionProxy": []any{"ArcturusUIProxy"}}},
		},
		{
			name: "SupervisorService gives Supervisor.ManagementService from spec.access",
			docs: element("SupervisorService", "s") + "spec:\n  access:\n  - type: VSPHERE_POD\n    managementService: vcf-depot\n  - type: VSPHERE_POD\n    managementService: vcenter-api\n",
			want: map[string]any{"Supervisor": map[string]any{"ManagementService": []any{"vcenter-api", "vcf-depot"}}},
		},
		{
			name: "a SupervisorService without access grants nothing",
			docs: element("SupervisorService", "s") + "spec:\n  region: r\n",
			want: map[string]any{},
		},
		{
			name: "kinds without grants grant nothing",
			docs: element("UserInterfacePlugin", "ui") + "---\n" + element("SupervisorRegistry", "reg") + "---\n" + element("Overlay", "o") + "---\n" + element("ApiExtension", "api") + "---\n" + element("RdeBundle", "rde") + "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n",
			want: map[string]any{},
		},
		{
			name: "values are unique and sorted across resources",
			docs: element("GlobalRole", "b") + "spec:\n  name: Zeta\n---\n" + element("GlobalRole", "a") + "spec:\n  name: Alpha\n---\n" + element("GlobalRole", "c") + "spec:\n  name: Zeta\n---\n" +
				element("SupervisorService", "s") + "spec:\n  supervisor: s1\n  access:\n  - managementService: vcf-depot\n---\n" +
				element("SupervisorService", "s") + "spec:\n  supervisor: s2\n  access:\n  - managementService: vcf-depot\n",
			want: map[string]any{
				"VCF Automation": map[string]any{"GlobalRole": []any{"Alpha", "Zeta"}},
				"Supervisor":     map[string]any{"ManagementService": []any{"vcf-depot"}},
			},
		},
		{
			name: "a missing grant field is an error",
			docs: element("GlobalRole", "g") + "spec:\n  description: no name\n",
			err:  `config: documents[0]: GlobalRole "g": spec.name: missing; expected a non-empty string (its access grant comes from it)`,
		},
		{
			name: "a grant field of the wrong type is an error",
			docs: element("VcServiceAccount", "sa") + "spec:\n  roleName: [a]\n",
			err:  `config: documents[0]: VcServiceAccount "sa": spec.roleName: expected a non-empty string, got array (its access grant comes from it)`,
		},
		{
			name: "a relying party needs redirect URIs",
			docs: element("RelyingParty", "rp") + "spec:\n  redirectUris: []\n",
			err:  `config: documents[0]: RelyingParty "rp": spec.redirectUris: expected a non-empty list of URIs, got array (its access grant comes from it)`,
		},
		{
			name: "an access entry needs its management service",
			docs: element("SupervisorService", "s") + "spec:\n  access:\n  - type: VSPHERE_POD\n",
			err:  `config: documents[0]: SupervisorService "s": spec.access[].managementService: item 0: managementService: missing; expected a non-empty string (its access grant comes from it)`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := newTestEngine(t).RenderAccessGrants(context.Background(), &rendererv1.RenderAccessGrantsRequest{Bundle: docsBundle(tc.docs)})
			if tc.err != "" {
				require.ErrorIs(t, err, ErrInvalidInput)
				require.Equal(t, tc.err, err.Error())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, resp.GetAccessGrants().AsMap())
		})
	}
}

func TestGrantRulesCoverAPIMdAccessGrants(t *testing.T) {
	// api.md's AccessGrants schema, field by field.
	want := []string{
		"vCenter.Role", "VCF Automation.GlobalRole", "VCF Automation.Role", "VCF Automation.RightBundle",
		"VCF Automation.RelyingParty", "VCF Automation.VcfaServiceAccount", "VCF Automation.ApiExtensionProxy",
		"Supervisor.ManagementService",
	}
	var got []string
	for _, r := range grantRules {
		got = append(got, r.Category+"."+r.Key)
	}
	require.Equal(t, want, got)
}
