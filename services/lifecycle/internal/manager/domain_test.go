package manager

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

func TestNamespace(t *testing.T) {
	require.Equal(t, "svc-myservice-broadcom-com", Namespace("myservice.broadcom.com"))
	require.Equal(t, "svc-arcturus-galaxy-com", Namespace("Arcturus.Galaxy.com"))
}

func doc(kind, name, supervisor, yaml string) *lifecycle.Document {
	return &lifecycle.Document{APIVersion: "services.vcfa.broadcom.com/v2", Kind: kind, Name: name, Supervisor: supervisor, YAML: []byte(yaml)}
}

func TestResourcesFrom(t *testing.T) {
	svc := &lifecycle.Service{ID: "svc-1", Namespace: "svc-arcturus"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	docs := []*lifecycle.Document{
		doc("SupervisorService", "arcturus-install", "sv1", "kind: SupervisorService\nspec:\n  supervisor: sv1\n  package:\n    spec:\n      refName: arcturus.example.com\n"),
		doc("SupervisorService", "arcturus-install", "sv2", "kind: SupervisorService\nspec:\n  supervisor: sv2\n  package:\n    spec:\n      refName: arcturus.example.com\n"),
		doc("GlobalRole", "arcturus-admin", "", "kind: GlobalRole\nspec:\n  name: Arcturus Administrator\n"),
		doc("VcServiceAccount", "vc-sa", "", "kind: VcServiceAccount\nspec:\n  username: svc-arcturus\n  vcenter: vc1.example.com\n"),
		{APIVersion: "v1", Kind: "Secret", Name: "hook-ca", YAML: []byte("kind: Secret\nmetadata:\n  name: hook-ca\nstringData:\n  ca.crt: PEM\n")},
	}
	res, err := lifecycle.ResourcesFrom(svc, "1.0.0", docs, []string{"sv1", "sv2"}, now)
	require.NoError(t, err)
	byID := map[string]*lifecycle.Resource{}
	for _, r := range res {
		byID[r.ID] = r
		require.Equal(t, "1.0.0", r.OwnerVersion)
		require.NotEmpty(t, r.Hash)
	}
	require.Len(t, res, 6, "the Secret goes to both Supervisors the service targets")
	require.Equal(t, target.Key{System: target.SystemSupervisor, Scope: "sv1", Kind: "SupervisorService", Identity: "arcturus.example.com"}, byID["SupervisorService/sv1/arcturus-install"].Target)
	require.Equal(t, "svc-arcturus", byID["SupervisorService/sv2/arcturus-install"].Namespace)
	require.Equal(t, target.Key{System: target.SystemVCFA, Kind: "GlobalRole", Identity: "Arcturus Administrator"}, byID["GlobalRole//arcturus-admin"].Target)
	require.Equal(t, target.Key{System: target.SystemVCenter, Scope: "vc1.example.com", Kind: "VcServiceAccount", Identity: "svc-arcturus"}, byID["VcServiceAccount//vc-sa"].Target)
	require.Equal(t, target.SecretIdentity("svc-arcturus", "hook-ca"), byID["Secret/sv2/hook-ca"].Target.Identity)

	_, err = lifecycle.ResourcesFrom(svc, "1.0.0", []*lifecycle.Document{docs[2], docs[2]}, nil, now)
	require.ErrorIs(t, err, lifecycle.ErrInvalidArgument, "duplicates are refused")
	_, err = lifecycle.ResourcesFrom(svc, "1.0.0", []*lifecycle.Document{doc("SupervisorService", "x", "", "kind: SupervisorService\n")}, nil, now)
	require.ErrorIs(t, err, lifecycle.ErrInvalidArgument, "a Supervisor kind needs its Supervisor")
}

func TestAcceptance(t *testing.T) {
	want := map[string]any{"VCF Automation": map[string]any{"GlobalRole": []any{"Arcturus Administrator"}}}
	require.NoError(t, acceptanceComplete(lifecycle.Accepted{EULA: true, Signatures: true, AccessGrants: map[string]any{
		"VCF Automation": map[string]any{"GlobalRole": []any{"Arcturus Administrator"}}}}, want))
	err := acceptanceComplete(lifecycle.Accepted{EULA: false, Signatures: true, AccessGrants: want}, want)
	require.ErrorIs(t, err, lifecycle.ErrFailedPrecondition)
	require.Contains(t, err.Error(), "accepted.eula")
	err = acceptanceComplete(lifecycle.Accepted{EULA: true, Signatures: true, AccessGrants: map[string]any{
		"VCF Automation": map[string]any{"GlobalRole": []any{"Other"}}}}, want)
	require.ErrorContains(t, err, "render-access-grants")
	require.ErrorContains(t, err, "Arcturus Administrator", "the message shows what is expected")
	// No grants needed: an empty object must be accepted as equal.
	require.NoError(t, acceptanceComplete(lifecycle.Accepted{EULA: true, Signatures: true}, map[string]any{}))
}

func TestPlanResources(t *testing.T) {
	have := []*lifecycle.Resource{
		{ID: "GlobalRole//a", Kind: "GlobalRole", Name: "a", Hash: "1"},
		{ID: "GlobalRole//b", Kind: "GlobalRole", Name: "b", Hash: "1", Doc: map[string]any{"rights": []any{"x"}}},
		{ID: "Role//gone", Kind: "Role", Name: "gone", Hash: "1"},
	}
	want := []*lifecycle.Resource{
		{ID: "GlobalRole//a", Kind: "GlobalRole", Name: "a", Hash: "1"},
		{ID: "GlobalRole//b", Kind: "GlobalRole", Name: "b", Hash: "2", Doc: map[string]any{"rights": []any{"x", "y"}}},
		{ID: "RightBundle//new", Kind: "RightBundle", Name: "new", Hash: "1", Doc: map[string]any{"name": "new"}},
	}
	got := planResources(have, want)
	require.Equal(t, []PlanEntry{
		{Type: "GlobalRole", Name: "a", Action: ActionUnchanged},
		{Type: "GlobalRole", Name: "b", Action: ActionReconfigured, CurrentYAML: "rights:\n- x\n", PlannedYAML: "rights:\n- x\n- \"y\"\n"},
		{Type: "RightBundle", Name: "new", Action: ActionCreated, PlannedYAML: "name: new\n"},
		{Type: "Role", Name: "gone", Action: ActionDecommissioned},
	}, got)
}

func TestOverlaySelectors(t *testing.T) {
	require.Equal(t, []string{"data", "tls.crt"}, steps.SplitPath(`data.tls\.crt`))
	require.Equal(t, []string{"status", "readyConditions", "externalIp"}, steps.SplitPath("status.readyConditions.externalIp"))
	res := []*lifecycle.Resource{
		{Kind: "SupervisorService", Doc: map[string]any{"metadata": map[string]any{"labels": map[string]any{
			"services.vcfa.broadcom.com/context": "install", "services.vcfa.broadcom.com/link-region": "us-west-1"}}},
			ReadyConditions: map[string]string{"externalIp": "10.0.1.100"}},
		{Kind: "Secret", Doc: map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "arcturus"}},
			"data": map[string]any{"tls.crt": "Q0VSVA=="}}},
	}
	v, ok := steps.ResolveSelector(map[string]any{"kind": "SupervisorService", "labels": map[string]any{
		"services.vcfa.broadcom.com/context": "install", "services.vcfa.broadcom.com/link-region": "us-west-1"},
		"path": "status.readyConditions.externalIp"}, res)
	require.True(t, ok)
	require.Equal(t, "10.0.1.100", v)
	v, ok = steps.ResolveSelector(map[string]any{"kind": "Secret", "labels": map[string]any{"app": "arcturus"}, "path": `data.tls\.crt`}, res)
	require.True(t, ok)
	require.Equal(t, "CERT", v)
	_, ok = steps.ResolveSelector(map[string]any{"kind": "SupervisorService", "labels": map[string]any{"services.vcfa.broadcom.com/link-region": "eu"},
		"path": "status.readyConditions.externalIp"}, res)
	require.False(t, ok, "labels must match")
}

func twoRegions() *lifecycle.Inventory {
	return &lifecycle.Inventory{Regions: []lifecycle.Region{
		{Name: "us-west-1", Supervisors: []lifecycle.Supervisor{{Name: "sv-w1"}, {Name: "sv-w2"}}},
		{Name: "eu-central-1", Supervisors: []lifecycle.Supervisor{{Name: "sv-eu"}}},
	}}
}

func linked(d *lifecycle.Document, region string) *lifecycle.Document {
	d.Labels = map[string]string{steps.LinkRegionLabel: region}
	return d
}

// serviceSupervisors is the one rule of docs/decisions.md, "A service's
// Supervisors".
func TestServiceSupervisors(t *testing.T) {
	inv := twoRegions()
	role := doc("GlobalRole", "admin", "", "kind: GlobalRole\n")
	cases := []struct {
		name string
		docs []*lifecycle.Document
		want []string
	}{
		{"named by spec.supervisor only", []*lifecycle.Document{doc("SupervisorService", "s", "sv-eu", ""), role}, []string{"sv-eu"}},
		{"a region link brings every Supervisor of the region", []*lifecycle.Document{linked(doc("GlobalRole", "a", "", ""), "us-west-1")}, []string{"sv-w1", "sv-w2"}},
		{"named plus linked", []*lifecycle.Document{doc("SupervisorService", "s", "sv-eu", ""), linked(doc("UserInterfacePlugin", "u", "", ""), "us-west-1")}, []string{"sv-eu", "sv-w1", "sv-w2"}},
		{"nothing named or linked: every Supervisor", []*lifecycle.Document{role}, []string{"sv-eu", "sv-w1", "sv-w2"}},
		{"a link to an unknown region adds none", []*lifecycle.Document{linked(doc("GlobalRole", "a", "", ""), "mars")}, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, steps.ServiceSupervisors(c.docs, inv))
		})
	}
	require.Empty(t, steps.ServiceSupervisors([]*lifecycle.Document{role}, &lifecycle.Inventory{}))
}

// A service made only of VCF Automation kinds with a region-linked Secret
// gets the Secret into its namespace on each Supervisor of the region
// (issue 16 §2), and every resource has a namespace (§5).
func TestSecretsReachTheirNamespace(t *testing.T) {
	svc := &lifecycle.Service{ID: "svc-1", Namespace: "svc-arcturus"}
	rend := &steps.Rendered{Inventory: twoRegions(), Resources: []*lifecycle.Document{
		linked(doc("GlobalRole", "admin", "", "kind: GlobalRole\nspec:\n  name: Admin\n"), "us-west-1"),
		doc("UserInterfacePlugin", "ui", "", "kind: UserInterfacePlugin\nspec:\n  image: x\n"),
		linked(&lifecycle.Document{APIVersion: "v1", Kind: "Secret", Name: "hook-ca", YAML: []byte("kind: Secret\nmetadata:\n  name: hook-ca\n")}, "us-west-1"),
	}}
	res, err := lifecycle.ResourcesFrom(svc, "1.0.0", rend.Resources, rend.Supervisors(), time.Now())
	require.NoError(t, err)
	var secrets []string
	for _, r := range res {
		require.Equal(t, "svc-arcturus", r.Namespace, "%s has its namespace", r.ID)
		if r.Kind == "Secret" {
			require.Equal(t, target.SystemSupervisor, r.Target.System)
			secrets = append(secrets, r.Supervisor)
		}
	}
	require.Equal(t, []string{"sv-w1", "sv-w2"}, secrets)
}
