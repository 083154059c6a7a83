package steps

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

func doc(kind, name, supervisor, yaml string) *lifecycle.Document {
	return &lifecycle.Document{APIVersion: "services.vcfa.broadcom.com/v2", Kind: kind, Name: name, Supervisor: supervisor, YAML: []byte(yaml)}
}

func TestOverlaySelectors(t *testing.T) {
	require.Equal(t, []string{"data", "tls.crt"}, SplitPath(`data.tls\.crt`))
	require.Equal(t, []string{"status", "readyConditions", "externalIp"}, SplitPath("status.readyConditions.externalIp"))
	res := []*lifecycle.Resource{
		{Kind: "SupervisorService", Doc: map[string]any{"metadata": map[string]any{"labels": map[string]any{
			"services.vcfa.broadcom.com/context": "install", "services.vcfa.broadcom.com/link-region": "us-west-1"}}},
			ReadyConditions: map[string]string{"externalIp": "10.0.1.100"}},
		{Kind: "Secret", Doc: map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "arcturus"}},
			"data": map[string]any{"tls.crt": "Q0VSVA=="}}},
	}
	v, ok := ResolveSelector(map[string]any{"kind": "SupervisorService", "labels": map[string]any{
		"services.vcfa.broadcom.com/context": "install", "services.vcfa.broadcom.com/link-region": "us-west-1"},
		"path": "status.readyConditions.externalIp"}, res)
	require.True(t, ok)
	require.Equal(t, "10.0.1.100", v)
	v, ok = ResolveSelector(map[string]any{"kind": "Secret", "labels": map[string]any{"app": "arcturus"}, "path": `data.tls\.crt`}, res)
	require.True(t, ok)
	require.Equal(t, "CERT", v)
	_, ok = ResolveSelector(map[string]any{"kind": "SupervisorService", "labels": map[string]any{"services.vcfa.broadcom.com/link-region": "eu"},
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
	d.Labels = map[string]string{LinkRegionLabel: region}
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
			require.Equal(t, c.want, ServiceSupervisors(c.docs, inv))
		})
	}
	require.Empty(t, ServiceSupervisors([]*lifecycle.Document{role}, &lifecycle.Inventory{}))
}

// A service made only of VCF Automation kinds with a region-linked Secret
// gets the Secret into its namespace on each Supervisor of the region
// (issue 16 §2), and every resource has a namespace (§5).
func TestSecretsReachTheirNamespace(t *testing.T) {
	svc := &lifecycle.Service{ID: "svc-1", Namespace: "svc-arcturus"}
	rend := &Rendered{Inventory: twoRegions(), Resources: []*lifecycle.Document{
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
