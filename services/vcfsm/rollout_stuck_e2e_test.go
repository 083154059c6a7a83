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

	w.sim.ClearFaults()
	back := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{})
	require.Equal(t, http.StatusAccepted, back.Status, "the way out of a stuck upgrade is the way out of a stuck rollout: %s", back.Body)
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
}
