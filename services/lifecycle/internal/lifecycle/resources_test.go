package lifecycle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

func TestNamespace(t *testing.T) {
	require.Equal(t, "svc-myservice-broadcom-com", lifecycle.Namespace("myservice.broadcom.com"))
	require.Equal(t, "svc-arcturus-galaxy-com", lifecycle.Namespace("Arcturus.Galaxy.com"))
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
