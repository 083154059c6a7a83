package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
)

// Every field of the inventory survives the domain: the renderer exposes
// all of it to templates and GET /v2/inventory shows what PUT stored.
func TestInventoryRoundTrip(t *testing.T) {
	p := &commonv1.Inventory{Regions: []*commonv1.Region{{
		Name: "us-west-1", StorageClasses: []string{"gold"},
		Supervisors: []*commonv1.Supervisor{{
			Name: "sv1", Id: "domain-c8", Version: "9.0.0.0", DefaultStorageClass: "gold",
			VcenterName: "vc1", VcenterId: "vc-1", KubernetesVersion: "v1.30.2", Kubeconfig: "apiVersion: v1\n",
			ManagementServices: map[string]*commonv1.ManagementService{"registry": {
				Addresses: []string{"10.0.0.1"}, CaChain: "PEM",
				Ports: map[string]*commonv1.ServicePort{"https": {Port: 443, Protocol: "TCP"}},
			}},
		}},
	}}}
	inv := Inventory(p)
	require.Equal(t, "domain-c8", inv.Regions[0].Supervisors[0].ID)
	require.Equal(t, int32(443), inv.Regions[0].Supervisors[0].ManagementServices["registry"].Ports["https"].Port)
	require.True(t, proto.Equal(p, InventoryProto(inv)), "round trip changed the inventory: %v", InventoryProto(inv))

	require.Empty(t, Inventory(nil).Regions)
	require.True(t, proto.Equal(&commonv1.Inventory{}, InventoryProto(nil)))
}

func TestDocumentsAndResultsRoundTrip(t *testing.T) {
	docs := []*commonv1.Resource{{ApiVersion: "v1", Kind: "Secret", Name: "ca", Labels: map[string]string{"a": "b"},
		Region: "r", Supervisor: "sv1", Yaml: []byte("kind: Secret\n"), Index: 3}}
	back := DocumentsProto(Documents(docs))
	require.Len(t, back, 1)
	require.True(t, proto.Equal(docs[0], back[0]))

	results := []*commonv1.CheckResult{{Severity: "ERROR", Kind: "supervisor", Expression: ">=9", CheckedVersion: "8.0",
		Subject: "sv1", Message: "too old", Source: "package"}}
	got := CheckResultsProto(CheckResults(results))
	require.Len(t, got, 1)
	require.True(t, proto.Equal(results[0], got[0]))
}
