package vcfsm_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

// register enters a version in the catalog.
func (w *world) register(t testing.TB, v arcturusVersion) {
	t.Helper()
	resp := w.box.Do(t, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": w.publish(t, v)})
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
}

// upgradesTo counts the service's upgrade operations to a version.
func upgradesTo(t testing.TB, w *world, id, version string) int {
	n := 0
	for _, op := range w.history(t, id).Operations {
		if op.Type == "upgrade" && op.ToVersion == version {
			n++
		}
	}
	return n
}

func v1As(version string) arcturusVersion {
	v := v1
	v.Version = version
	return v
}

// Automatic upgrade picks well: the newest registered version that is
// compatible (not the newer one whose Supervisor constraint fails), no
// pre-release unless the service opts in, and a version it failed on is
// not picked again until an administrator clears its quarantine.
// Before: it picked the newest registered version (1.3.0, blocked on every
// Supervisor) and retried it forever, never reaching 1.1.0.
func TestAutoUpgradePicksWell(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	w.register(t, v1As("1.1.0"))
	w.register(t, v1As("1.2.0-rc.1"))
	blocked := v1As("1.3.0")
	blocked.Annotations = map[string]string{"appplatform.vmware.com/supervisor-version-constraints": ">=9.2.0.0"}
	w.register(t, blocked)

	patch(t, w, id, `{"autoUpgrade":true,"autoRollback":true}`, http.StatusAccepted)
	poll(t, "the automatic upgrade to 1.1.0", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Version == "1.1.0" && v.Status == "Healthy"
	})
	require.Zero(t, upgradesTo(t, w, id, "1.3.0"), "the incompatible version is never tried")
	require.Zero(t, upgradesTo(t, w, id, "1.2.0-rc.1"), "no pre-release without opting in")

	patch(t, w, id, `{"autoUpgradePrereleases":true}`, http.StatusAccepted)
	v := poll(t, "the automatic upgrade to the pre-release", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Version == "1.2.0-rc.1" && v.Status == "Healthy"
	})
	require.Equal(t, "1.2.0-rc.1", v.Version)

	// 1.4.0 fails (its GlobalRole's new rights cannot be applied, once)
	// and is rolled back automatically: it is quarantined and not picked
	// again. (Its access grants are 1.2.0-rc.1's: an automatic upgrade
	// accepts no new ones.)
	require.NoError(t, w.sim.InjectFault(simulator.Fault{Kind: "GlobalRole", Op: "apply", Effect: simulator.EffectFail, Times: 1, Message: "rights not registered"}))
	failing := v1As("1.4.0")
	failing.Rights = []string{"RIGHT_ORGANIZATION_VIEW", "RIGHT_ORG_TRAVERSE"}
	w.register(t, failing)
	poll(t, "the failed automatic upgrade rolled back", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return upgradesTo(t, w, id, "1.4.0") == 1 && v.Version == "1.2.0-rc.1" && v.Status == "Healthy" && v.Phase == ""
	})
	versions := string(w.box.Do(t, http.MethodGet, "/v2/vcf-service-versions", nil).Body)
	require.Contains(t, versions, "the automatic upgrade of service "+id)
	deadline := time.Now().Add(3 * time.Second) // over 30 reconcile intervals: the old retry delay
	for time.Now().Before(deadline) {
		require.Equal(t, 1, upgradesTo(t, w, id, "1.4.0"), "1.4.0 is not picked again before it is cleared")
		require.Equal(t, "1.2.0-rc.1", w.get(t, id).Version)
	}

	// An administrator fixes the cause and clears the version.
	w.sim.ClearFaults()
	resp := w.box.Do(t, http.MethodDelete, "/v2/vcf-service-versions/"+arcturusName+"/1.4.0/quarantine", nil)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	poll(t, "the automatic upgrade to 1.4.0 once cleared", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Version == "1.4.0" && v.Status == "Healthy"
	})
}
