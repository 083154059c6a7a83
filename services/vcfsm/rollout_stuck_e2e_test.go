package vcfsm_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// A rollout whose own rollback fails for good after targets moved: the
// canary's SupervisorService refuses to be handed back to 1.0.0, so the
// step rollback-wave-1 is retried until its time bound and the operation
// is Stuck, the service Unhealthy and in maintenance at 2.0.0. The
// administrator's way out is the one of a stuck upgrade, POST /rollback:
// once the cause is fixed it takes every target back, and each one ends
// on 1.0.0, moved exactly once each way (the one that never moved, never).
// The recovery quarantines the version and the rollout ends RolledBack
// (requireRecoveredRolloutQuarantined).
func TestStuckRolloutRollbackIsRecoveredByRollback(t *testing.T) {
	w := newWorld(t, fastRollouts, func(c *app.Config) {
		c.Lifecycle.StepTimeouts = map[string]time.Duration{"rollback-wave-1": 2 * time.Second}
	})
	id := w.installed(t, w.publish(t, v1))
	src2 := w.publish(t, v2)

	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`,"rollout":{"strategy":`+fmt.Sprintf(canaryThenRest, `,"approval":true`)+`}}`, http.StatusAccepted)
	waitRollout(t, w, id, "WaitingApproval")
	require.NoError(t, w.sim.InjectFault(simulator.Fault{Scope: "supervisor-vc1", Kind: "SupervisorService", Op: "transfer", Effect: simulator.EffectFail, Message: "handing it back refused"}))
	abort := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/abort", map[string]any{"reason": "stop"})
	require.Equal(t, http.StatusOK, abort.Status, "%s", abort.Body)

	v := poll(t, "the rollout stuck", time.Minute, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.State != nil && v.State.Operation != nil && v.State.Operation.Outcome == "Stuck"
	})
	require.Equal(t, "rollback-wave-1", v.State.Operation.Step)
	require.Equal(t, "Unhealthy", v.Status)
	require.Equal(t, "2.0.0", v.Version, "partly moved: it points at the new version, in maintenance")
	require.Equal(t, map[string]string{"supervisor-vc1": "2.0.0", "supervisor-eu1": "1.0.0"}, w.ssOwners(t, id))

	stuck := w.rollout(t, id).OperationID
	require.NotEmpty(t, stuck)

	w.sim.ClearFaults()
	back := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{})
	require.Equal(t, http.StatusAccepted, back.Status, "the way out of a stuck upgrade is the way out of a stuck rollout: %s", back.Body)
	var started struct {
		Rollout struct{ OperationID, State string } `json:"rollout"`
	}
	back.JSON(t, &started)
	require.Equal(t, []string{stuck, "RollingBack"}, []string{started.Rollout.OperationID, started.Rollout.State}, "the rollout rolls back while the rollback that recovers it runs: %s", back.Body)
	v = w.waitStatus(t, id, "Healthy")
	require.Equal(t, "1.0.0", v.Version)
	require.Equal(t, map[string]string{"supervisor-vc1": "1.0.0", "supervisor-eu1": "1.0.0"}, w.ssOwners(t, id))
	for key, ver := range w.owned(t, id) {
		require.Equal(t, "1.0.0", ver, "%s", key)
	}
	moves, err := w.sim.Moves(context.Background())
	require.NoError(t, err)
	checked := 0
	for key, m := range moves {
		require.LessOrEqual(t, m["2.0.0"], 1, "%s moved forward once at most: %v", key, m)
		require.LessOrEqual(t, m["1.0.0"], 2, "%s installed, then moved back once at most: %v", key, m)
		if !strings.Contains(key, "SupervisorService") {
			continue
		}
		checked++
		if strings.Contains(key, "supervisor-vc1") {
			require.Equal(t, map[string]int{"1.0.0": 2, "2.0.0": 1}, m, "%s: installed, moved once, back once", key)
		} else {
			require.Equal(t, map[string]int{"1.0.0": 1}, m, "%s: never moved", key)
		}
	}
	require.Equal(t, 2, checked, "%v", moves)
	h := w.history(t, id)
	var outcomes []string
	for _, op := range h.Operations {
		outcomes = append(outcomes, op.Type+":"+op.Outcome)
	}
	require.Contains(t, outcomes, "rollout:RolledBack", "the stuck rollout ends with the rollback that recovered it")
	require.Contains(t, outcomes, "rollback:Succeeded")
	requireRecoveredRolloutQuarantined(t, w, id, src2, stuck)
}

// requireRecoveredRolloutQuarantined: a stuck rollout recovered by POST
// /rollback failed as much as one that rolled itself back, so its version
// is quarantined (reason and rollout listed; an upgrade to it refused
// without an override), and the rollout says RolledBack everywhere: GET
// …/rollout, the service's summary and FIQL on it.
func requireRecoveredRolloutQuarantined(t *testing.T, w *world, id, src2, stuck string) {
	t.Helper()
	r := waitRollout(t, w, id, "RolledBack")
	require.Equal(t, stuck, r.OperationID)
	require.Contains(t, r.Reason, "recovered from stuck rollout "+stuck)
	for _, sup := range []string{"supervisor-vc1", "supervisor-eu1"} {
		v, _ := r.target(sup)
		require.Equal(t, "1.0.0", v, "%s is back on (or never left) 1.0.0", sup)
	}
	_, vc1 := r.target("supervisor-vc1")
	require.Equal(t, "RolledBack", vc1, "the canary that moved is rolled back")

	var svc struct {
		Rollout struct{ OperationID, State, ToVersion string } `json:"rollout"`
	}
	w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).JSON(t, &svc)
	require.Equal(t, []string{stuck, "RolledBack", "2.0.0"}, []string{svc.Rollout.OperationID, svc.Rollout.State, svc.Rollout.ToVersion}, "the service's rollout summary")
	list := w.box.Do(t, http.MethodGet, "/v2/vcf-services?page=1&pageSize=25&filter=rollout.state==RolledBack", nil)
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Body)
	require.Contains(t, string(list.Body), id, "FIQL on the rollout's state")

	var versions struct {
		Versions []struct {
			Version    string
			Quarantine *struct{ Reason, Rollout, At string }
		}
	}
	w.box.Do(t, http.MethodGet, "/v2/vcf-service-versions?name="+arcturusName, nil).JSON(t, &versions)
	var reason string
	for _, v := range versions.Versions {
		if v.Version == "2.0.0" {
			require.NotNil(t, v.Quarantine, "2.0.0 is quarantined")
			require.Equal(t, stuck, v.Quarantine.Rollout, "the quarantine names the rollout")
			require.NotEmpty(t, v.Quarantine.At)
			reason = v.Quarantine.Reason
		}
	}
	require.Contains(t, reason, "recovered from stuck rollout "+stuck+" (stuck at step rollback-wave-1) by rollback ")
	refused := w.box.Do(t, http.MethodPatch, "/v2/vcf-services/"+id, map[string]any{"source": src2})
	require.Equal(t, http.StatusBadRequest, refused.Status, "%s", refused.Body)
	require.Contains(t, string(refused.Body), "quarantined")
	require.Contains(t, string(refused.Body), "recovered from stuck rollout "+stuck)
}
