package vcfsm_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

// The lifecycle semantics of issue 24, one defect per test, each driven
// through REST and checked on the targets through the simulator driver.

// ownedOn is what the service owns on its targets.
func (w *world) ownedOn(t testing.TB, id string) []target.Object {
	t.Helper()
	objs, err := w.sim.List(context.Background(), id)
	require.NoError(t, err)
	return objs
}

// historyText is the service's history as text.
func (w *world) historyText(t testing.TB, id string) string {
	t.Helper()
	resp := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	return string(resp.Body)
}

// idle waits until no operation of the service runs.
func (w *world) idle(t testing.TB, id string) svcView {
	t.Helper()
	return poll(t, "no operation running on "+id, 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Phase == "" && (v.State == nil || v.State.Operation == nil || v.State.Operation.Outcome != "Running" && v.State.Operation.Outcome != "Pending")
	})
}

// An upgrade of an inactive service changes its version without applying
// anything and ends like a fresh registration: Unresolved, the previous
// version's acceptance gone; activation then needs the new version's.
func TestUpgradeOfInactiveServiceAppliesNothing(t *testing.T) {
	w := newWorld(t)
	id := w.create(t, w.publish(t, v1))
	w.waitStatus(t, id, "Unresolved")
	oldGrants := w.grants(t, id)
	patch(t, w, id, `{"accepted":{"eula":true,"signatures":true,"accessGrants":`+string(oldGrants)+`}}`, http.StatusAccepted)
	require.Equal(t, "Ready", w.get(t, id).Status)

	// A version whose bundle does not validate: the upgrade fails and the
	// service is as it was, Ready with its acceptance.
	bad := ver("1.5.0", map[string]string{"appplatform.vmware.com/source-version-upgrade-constraints": ">=banana"})
	patch(t, w, id, `{"source":"`+w.publish(t, bad)+`"}`, http.StatusAccepted)
	v := w.idle(t, id)
	require.Equal(t, "1.0.0", v.Version)
	require.Equal(t, "Ready", v.Status, "%+v", v.State)
	require.Equal(t, "Failed", v.State.Operation.Outcome)

	patch(t, w, id, `{"source":"`+w.publish(t, v2)+`"}`, http.StatusAccepted)
	v = poll(t, "the version to change", 60*time.Second, func() svcView { return w.idle(t, id) }, func(v svcView) bool { return v.Version == "2.0.0" })
	require.Equal(t, "inactive", v.LifecycleState)
	require.Equal(t, "Unresolved", v.Status, "like a fresh registration: %+v", v.State)
	require.Empty(t, w.ownedOn(t, id), "an inactive service's resources are not applied")
	require.Empty(t, v.State.Resources)
	require.Contains(t, w.historyText(t, id), `"type":"upgrade"`)

	// The acceptance given to 1.0.0 does not activate 2.0.0.
	patch(t, w, id, `{"lifecycleState":"active"}`, http.StatusBadRequest)
	w.activate(t, id)
	v = w.waitStatus(t, id, "Healthy", "Unhealthy")
	require.Equal(t, "Healthy", v.Status, "%+v", v.State)
	for _, o := range w.ownedOn(t, id) {
		require.Equal(t, "2.0.0", o.Owner.Version, "%s", o.Key)
	}
}

// A paused service is not upgraded or rolled back: the administrator
// paused it for a reason (docs/decisions.md, "Lifecycle semantics").
func TestPausedServiceRefusesUpgradeAndRollback(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	before := w.owned(t, id)
	patch(t, w, id, `{"lifecycleState":"paused"}`, http.StatusAccepted)

	resp := patch(t, w, id, `{"source":"`+w.publish(t, v2)+`"}`, http.StatusConflict)
	require.Contains(t, string(resp.Body), "service "+arcturusName+" is paused: resume it before upgrading")
	resp = w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{"targetVersion": "0.9.0"})
	require.Equal(t, http.StatusConflict, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), "is paused: resume it before rolling back")

	v := w.get(t, id)
	require.Equal(t, "1.0.0", v.Version)
	require.Equal(t, "paused", v.LifecycleState)
	require.Equal(t, before, w.owned(t, id), "nothing moved")
	require.NotContains(t, w.historyText(t, id), `"type":"upgrade"`)
}

// Deactivation removes what the service created from every target, with
// phase Uninstalling while it runs, and leaves what it adopted; activating
// again re-applies.
func TestDeactivationRemovesAndReactivationReapplies(t *testing.T) {
	w := newWorld(t)
	// A GlobalRole that existed before the service: adopted, not owned.
	role := target.Key{System: target.SystemVCFA, Kind: "GlobalRole", Identity: "Arcturus Administrator"}
	_, err := w.sim.Apply(context.Background(), target.Desired{Key: role, Spec: map[string]any{"name": "Arcturus Administrator"}})
	require.NoError(t, err)
	id := w.installed(t, w.publish(t, v1))
	require.Len(t, w.ownedOn(t, id), 5)

	resp := patch(t, w, id, `{"lifecycleState":"inactive"}`, http.StatusAccepted)
	var v svcView
	resp.JSON(t, &v)
	require.Equal(t, "inactive", v.LifecycleState)
	require.Equal(t, "Uninstalling", v.Phase, "being deactivated")
	require.Equal(t, "Busy", v.Status)
	v = w.idle(t, id)
	require.Equal(t, "Ready", v.Status, "%+v", v.State)
	require.Empty(t, w.ownedOn(t, id), "every owned resource removed")
	require.Empty(t, v.State.Resources)
	obj, err := w.sim.Get(context.Background(), role)
	require.NoError(t, err, "the adopted GlobalRole stays on its target")
	require.Empty(t, obj.Owner.ServiceID, "released, not owned")
	require.Contains(t, w.historyText(t, id), `"type":"deactivate"`)

	w.activate(t, id)
	v = w.waitStatus(t, id, "Healthy", "Unhealthy")
	require.Equal(t, "Healthy", v.Status, "%+v", v.State)
	require.Len(t, w.ownedOn(t, id), 5, "re-activation re-applies every resource")
}

// forceDelete removes what it can reach (deleting, stripping finalizers)
// and lists as orphans only what it cannot.
func TestForceDeleteRemovesWhatItReaches(t *testing.T) {
	for _, unreachable := range []bool{false, true} {
		name := "all-reachable"
		if unreachable {
			name = "one-unreachable"
		}
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			id := w.installed(t, w.publish(t, v1))
			if unreachable {
				w.sim.SetSupervisor(simulator.SeedSupervisor{Name: "supervisor-eu1", Unreachable: true})
			}
			resp := w.box.Do(t, http.MethodDelete, "/v2/vcf-services/"+id+"?forceDelete=true", nil)
			require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
			poll(t, "the forced deletion", 30*time.Second, func() int {
				return w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).Status
			}, func(s int) bool { return s == http.StatusNotFound })
			hist := w.historyText(t, id)
			left := w.ownedOn(t, id)
			if !unreachable {
				require.NotContains(t, hist, "orphaned", "nothing orphaned")
				require.Empty(t, left, "nothing left on the targets")
				all, err := w.sim.List(context.Background(), "")
				require.NoError(t, err)
				require.Empty(t, all, "deleted, not released")
				return
			}
			require.Equal(t, 1, strings.Count(hist, "orphaned "), "only the unreachable Supervisor's resource: %s", hist)
			require.Contains(t, hist, "orphaned SupervisorService arcturus-install")
			require.Contains(t, hist, "supervisor-eu1")
			require.Len(t, left, 1, "the unreachable Supervisor's resource is left")
			require.Equal(t, "supervisor-eu1", left[0].Scope)
		})
	}
}

// A partially failed upgrade stays in maintenance: the controllers do not
// reconcile the half-moved new version until a rollback starts or the
// administrator retries.
func TestPartialUpgradeStaysInMaintenance(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	require.NoError(t, w.sim.InjectFault(simulator.Fault{Kind: "RightBundle", Op: "apply", Effect: simulator.EffectFail, Message: "rights not registered"}))
	src2 := w.publish(t, v2)
	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`}`, http.StatusAccepted)
	v := w.waitStatus(t, id, "Unhealthy")
	require.Equal(t, "2.0.0", v.Version, "a partial upgrade")
	noted := false
	for _, d := range v.State.ErrorDetails {
		noted = noted || strings.Contains(d.Message, "stays in maintenance")
	}
	require.True(t, noted, "the state says it stays in maintenance: %+v", v.State.ErrorDetails)
	patch(t, w, id, `{"values":{"userOverwrite":"aG9va0NBOiB4Cg=="}}`, http.StatusConflict)
	patch(t, w, id, `{"lifecycleState":"paused"}`, http.StatusConflict)

	// A resource removed behind its back is not restored: not reconciled.
	role := target.Key{System: target.SystemVCFA, Kind: "GlobalRole", Identity: "Arcturus Administrator"}
	require.NoError(t, w.sim.Delete(context.Background(), role))
	w.sim.ClearFaults()
	// Twenty controller periods (50ms in these tests) pass without it.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); <-tick.C {
		_, err := w.sim.Get(context.Background(), role)
		require.ErrorIs(t, err, target.ErrNotFound, "the controllers reconciled a service in maintenance")
		require.Equal(t, "Unhealthy", w.get(t, id).Status)
	}

	// The cause fixed, the administrator retries the same upgrade: it moves
	// the resources again and ends maintenance (TestRollback covers the
	// other way out).
	patch(t, w, id, `{"source":"`+src2+`"}`, http.StatusAccepted)
	v = w.waitStatus(t, id, "Healthy", "Unhealthy")
	require.Equal(t, "Healthy", v.Status, "%+v", v.State)
	require.Equal(t, "2.0.0", v.Version)
	_, err := w.sim.Get(context.Background(), role)
	require.NoError(t, err, "reconciled again")
	for _, o := range w.ownedOn(t, id) {
		require.Equal(t, "2.0.0", o.Owner.Version, "%s", o.Key)
	}
}

// Targets that cannot be reached make the service Unavailable, not Busy.
func TestUnreachableTargetsMakeServiceUnavailable(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	w.sim.SetSupervisor(simulator.SeedSupervisor{Name: "supervisor-eu1", Unreachable: true})
	v := w.waitStatus(t, id, "Unavailable", "Busy")
	require.Equal(t, "Unavailable", v.Status, "%+v", v.State)
	w.sim.SetSupervisor(simulator.SeedSupervisor{Name: "supervisor-eu1"})
	w.waitStatus(t, id, "Healthy")
}

// PUT with lifecycleState decommissioned behaves as DELETE.
func TestPutDecommissionedDeletes(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	v := w.get(t, id)
	body := `{"id":"` + v.ID + `","values":{},"lifecycleState":"decommissioned"}`
	resp := w.box.Do(t, http.MethodPut, "/v2/vcf-services/"+id, []byte(body))
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), `"phase":"Deleting"`)
	poll(t, "deletion", 30*time.Second, func() int {
		return w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).Status
	}, func(s int) bool { return s == http.StatusNotFound })
	require.Empty(t, w.ownedOn(t, id))
	require.Contains(t, w.historyText(t, id), `"type":"delete"`)
}
