package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Parameters that messages repeat are refused when over-long, named and
// measured, never repeated (issue 25 §8).
func TestOverLongParametersAreNamedNotEchoed(t *testing.T) {
	long := strings.Repeat("Z", 300)
	cases := []struct {
		req  any
		name string
	}{
		{&lifecyclev1.ListServicesRequest{SortAsc: long}, "sortAsc"},
		{&lifecyclev1.ListServicesRequest{SortDesc: long}, "sortDesc"},
		{&lifecyclev1.GetServiceRequest{Id: long}, "id"},
		{&lifecyclev1.WatchServiceRequest{Id: "x", Until: long}, "until"},
		{&lifecyclev1.RollbackServiceRequest{Id: "x", TargetVersion: long}, "targetVersion"},
		{&lifecyclev1.CheckSupervisorUpgradeRequest{Supervisor: long}, "supervisor"},
		{&lifecyclev1.ListServiceVersionsRequest{Name: long}, "name"},
		{&lifecyclev1.PatchServiceRequest{Id: "x", Service: &lifecyclev1.ServicePatch{Phase: long}}, "phase"},
		{&lifecyclev1.PatchServiceRequest{Id: "x", Service: &lifecyclev1.ServicePatch{LifecycleState: long}}, "lifecycleState"},
		{&lifecyclev1.UpdateServiceRequest{Id: "x", Service: &lifecyclev1.ServiceUpdate{LifecycleState: long}}, "lifecycleState"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkParams(c.req)
			require.ErrorIs(t, err, lifecycle.ErrInvalidArgument)
			require.ErrorContains(t, err, c.name+": 300 bytes long, more than the 256 a "+c.name+" can be")
			require.NotContains(t, err.Error(), "ZZZ")
		})
	}
	require.NoError(t, checkParams(&lifecyclev1.ListServicesRequest{SortAsc: strings.Repeat("a", 256), Filter: strings.Repeat("f", 4000)}),
		"at the limit, and parameters bounded elsewhere, pass")
}
