package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/structpb"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/ops"
)

func ptr[T any](v T) *T { return &v }

// PUT replaces the representation: every field it carries is set, those
// it omits take their defaults, except accepted, source and planId, which
// an omission leaves alone.
func TestChangeFromPut(t *testing.T) {
	grants, err := structpb.NewStruct(map[string]any{"vCenter": map[string]any{"Role": []any{"x"}}})
	require.NoError(t, err)
	rev := int64(7)
	full := &lifecyclev1.ServiceUpdate{
		Id: "svc-1", LifecycleState: "active",
		Values:      &lifecyclev1.OverlayValues{PlatformOverlay: "cA==", VendorOverlay: "dg==", UserOverwrite: "dQ==", Effective: "ZQ=="},
		Reconfigure: &lifecyclev1.Reconfigure{Events: []string{"new-supervisor"}},
		Accepted:    &lifecyclev1.Accepted{Eula: true, Signatures: true, AccessGrants: grants},
		Source:      "oci://r/b:2", Labels: map[string]string{"a": "b"}, Locations: map[string]string{"l": "m"},
		Tenants: map[string]string{"t": "u"}, AutoUpgrade: true, AutoRollback: true, AutoUpgradePrereleases: true,
		Revision: &rev, Rollout: &lifecyclev1.RolloutRequest{Name: "canary-first"}, RolloutStrategy: "fast",
		Override: &lifecyclev1.Override{Reason: "known"}, PlanId: "plan-1",
	}
	got, err := changeFromPut(&lifecyclev1.UpdateServiceRequest{Id: "svc-1", Service: full})
	require.NoError(t, err)
	require.Equal(t, ops.Change{
		Values:         &lifecycle.OverlayValues{PlatformOverlay: "cA==", VendorOverlay: "dg==", UserOverwrite: "dQ==", Effective: "ZQ=="},
		ValueFields:    []string{"platformOverlay", "vendorOverlay", "userOverwrite", "effective"},
		LifecycleState: ptr("active"),
		Labels:         &map[string]string{"a": "b"}, Locations: &map[string]string{"l": "m"}, Tenants: &map[string]string{"t": "u"},
		Accepted:    &lifecycle.Accepted{EULA: true, Signatures: true, AccessGrants: grants.AsMap()},
		Reconfigure: []string{"new-supervisor"},
		Source:      ptr("oci://r/b:2"),
		AutoUpgrade: ptr(true), AutoRollback: ptr(true), AutoUpgradePrereleases: ptr(true),
		Rollout:         &lifecycle.RolloutRequest{Name: "canary-first"},
		RolloutStrategy: ptr("fast"),
		Override:        &lifecycle.Override{Reason: "known"},
		Revision:        &rev,
		PlanID:          ptr("plan-1"),
	}, got)

	minimal := &lifecyclev1.ServiceUpdate{Id: "svc-1", LifecycleState: "paused", Values: &lifecyclev1.OverlayValues{UserOverwrite: "dQ=="}}
	got, err = changeFromPut(&lifecyclev1.UpdateServiceRequest{Id: "svc-1", Service: minimal})
	require.NoError(t, err)
	var none map[string]string
	require.Equal(t, ops.Change{
		Values:         &lifecycle.OverlayValues{UserOverwrite: "dQ=="},
		ValueFields:    []string{"platformOverlay", "vendorOverlay", "userOverwrite"},
		LifecycleState: ptr("paused"),
		Labels:         &none, Locations: &none, Tenants: &none,
		Reconfigure: []string{},
		AutoUpgrade: ptr(false), AutoRollback: ptr(false), AutoUpgradePrereleases: ptr(false),
		RolloutStrategy: ptr(""),
	}, got, "accepted, source, planId, override and rollout omitted are not changed")

	for body, want := range map[*lifecyclev1.ServiceUpdate]string{
		nil: "the request body is required",
		{Id: "other", LifecycleState: "active", Values: minimal.Values}: `body id "other" does not match the path id "svc-1"`,
		{Id: "svc-1", Values: minimal.Values}:                           "lifecycleState is required in PUT",
		{Id: "svc-1", LifecycleState: "active"}:                         "values is required in PUT",
		{LifecycleState: "active", Values: minimal.Values}:              "id is required in PUT: the service's id, svc-1",
	} {
		_, err := changeFromPut(&lifecyclev1.UpdateServiceRequest{Id: "svc-1", Service: body})
		require.ErrorContains(t, err, want)
	}
}

// PATCH changes exactly the fields its mask names; a named field that is
// empty is set empty (accepted: withdrawn).
func TestChangeFromPatch(t *testing.T) {
	req := &lifecyclev1.PatchServiceRequest{Id: "svc-1", Service: &lifecyclev1.ServicePatch{Source: "oci://r/b:2", PlanId: "plan-1"}}
	got, err := changeFromPatch(req)
	require.NoError(t, err)
	require.Equal(t, ops.Change{Source: ptr("oci://r/b:2"), PlanID: ptr("plan-1")}, got, "no mask: the set fields")

	req.Service = &lifecyclev1.ServicePatch{Values: &lifecyclev1.OverlayValues{VendorOverlay: "dg=="}}
	req.UpdateMask = &fieldmaskpb.FieldMask{Paths: []string{"values.vendor_overlay", "accepted", "reconfigure", "auto_upgrade", "rollout_strategy"}}
	got, err = changeFromPatch(req)
	require.NoError(t, err)
	require.Equal(t, ops.Change{
		Values: &lifecycle.OverlayValues{VendorOverlay: "dg=="}, ValueFields: []string{"vendorOverlay"},
		Accepted: &lifecycle.Accepted{}, Reconfigure: []string{}, AutoUpgrade: ptr(false), RolloutStrategy: ptr(""),
	}, got)

	req.UpdateMask.Paths = []string{"id"}
	_, err = changeFromPatch(req)
	require.ErrorContains(t, err, `field "id" cannot be patched`)
	req.UpdateMask.Paths = []string{"lifecycle_state"}
	req.Service = &lifecyclev1.ServicePatch{LifecycleState: lifecycle.StateDecommissioned}
	_, err = changeFromPatch(req)
	require.ErrorIs(t, err, lifecycle.ErrInvalidTransition)
}
