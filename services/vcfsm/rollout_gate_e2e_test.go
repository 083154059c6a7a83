package vcfsm_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// Wave 2's gate cannot reach its Supervisor (it does not answer): the
// rollout waits, Running, saying which Supervisor and why, and looks
// again every poll; past the strategy's gate timeout the wave fails and
// its policy (rollback, the default) takes wave 1's targets back. The
// operation ends RolledBack (not Stuck), the history says why, and once
// the Supervisor answers again the service is Healthy on 1.0.0.
func TestRolloutGateThatCannotRunWaitsThenRollsBack(t *testing.T) {
	w, id := rolloutToUnreachableWave(t, `{"gateTimeout":"3s","waves":[{"name":"canary","regions":["us-west-1"]},{"name":"rest","rest":true,"approval":true}]}`)

	r := poll(t, "wave 2 waiting for its gate", time.Minute, func() rolloutView { return w.rollout(t, id) }, func(r rolloutView) bool {
		return strings.Contains(r.Reason, "cannot run")
	})
	require.Equal(t, "Running", r.State, "waiting for a gate that cannot run is not a pause: %+v", r)
	require.Contains(t, r.Reason, "supervisor-eu1", "it names the Supervisor")
	require.Contains(t, r.Reason, "does not answer", "and the error")
	v, st := r.target("supervisor-vc1")
	require.Equal(t, []string{"2.0.0", "Done"}, []string{v, st}, "the canary moved")

	r = waitRollout(t, w, id, "RolledBack")
	require.Contains(t, r.Reason, "wave rest: its checks could not run within the gate timeout of 3s on 1 of 1 target(s)")
	require.Contains(t, r.Reason, "supervisor-eu1")
	v, st = r.target("supervisor-vc1")
	require.Equal(t, []string{"1.0.0", "RolledBack"}, []string{v, st}, "the canary moved back")
	w.idle(t, id)
	h := w.history(t, id)
	var names []string
	for _, op := range h.Operations {
		if op.Type != "rollout" {
			continue
		}
		require.Equal(t, "RolledBack", op.Outcome, "not Stuck")
		for _, s := range op.Steps {
			names = append(names, s.Name+":"+s.Status)
			if s.Name == "wave-2" {
				require.Contains(t, s.Message, "its checks could not run", "the history says why")
			}
		}
	}
	require.Equal(t, []string{"download:Succeeded", "configuration:Succeeded", "plan:Succeeded", "maintenance:Succeeded",
		"wave-1:Succeeded", "wave-2:Succeeded", "promote:Skipped", "rollback-wave-2:Succeeded", "rollback-wave-1:Succeeded", "rolled-back:Succeeded"}, names)

	w.sim.SetSupervisor(simulator.SeedSupervisor{Name: "supervisor-eu1"})
	svc := w.waitStatus(t, id, "Healthy")
	require.Equal(t, "1.0.0", svc.Version)
	require.Equal(t, map[string]string{"supervisor-vc1": "1.0.0", "supervisor-eu1": "1.0.0"}, w.ssOwners(t, id), "every target on 1.0.0")
}

// With onFailure pause, a gate that could not run within the gate timeout
// pauses the rollout (its target Failed, nothing of the wave moved); once
// the Supervisor answers again a resume checks it again and the wave goes
// on: every target on 2.0.0.
func TestRolloutGateThatCannotRunPausesThenResumes(t *testing.T) {
	w, id := rolloutToUnreachableWave(t, `{"gateTimeout":"2s","waves":[{"name":"canary","regions":["us-west-1"]},{"name":"rest","rest":true,"approval":true,"onFailure":"pause"}]}`)

	r := waitRollout(t, w, id, "Paused")
	require.Contains(t, r.Reason, "its checks could not run within the gate timeout of 2s")
	require.Contains(t, r.Reason, "paused (resume checks them again, abort rolls back)")
	v, st := r.target("supervisor-eu1")
	require.Equal(t, []string{"1.0.0", "Failed"}, []string{v, st}, "it never moved")

	w.sim.SetSupervisor(simulator.SeedSupervisor{Name: "supervisor-eu1"})
	require.Equal(t, http.StatusOK, w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/resume", map[string]any{}).Status)
	r = waitRollout(t, w, id, "Succeeded")
	for _, sup := range []string{"supervisor-vc1", "supervisor-eu1"} {
		v, st := r.target(sup)
		require.Equal(t, []string{"2.0.0", "Done"}, []string{v, st}, sup)
	}
	svc := w.waitStatus(t, id, "Healthy")
	require.Equal(t, "2.0.0", svc.Version)
	require.Equal(t, map[string]string{"supervisor-vc1": "2.0.0", "supervisor-eu1": "2.0.0"}, w.ssOwners(t, id))
}

// A wave's failure budget does not let it go on without a target whose
// gate could not run: that target never moved, and a rollout that
// succeeded without it would leave it on 1.0.0 with nothing to move it
// (the service's records of it are 1.0.0's). Past the gate timeout the
// wave fails even with maxFailures 1, and rolls back.
func TestRolloutGateThatCannotRunIsNotWithinBudget(t *testing.T) {
	w, id := rolloutToUnreachableWave(t, `{"gateTimeout":"2s","waves":[{"name":"canary","regions":["us-west-1"]},{"name":"rest","rest":true,"approval":true,"maxFailures":1}]}`)

	r := waitRollout(t, w, id, "RolledBack")
	require.Contains(t, r.Reason, "wave rest: its checks could not run within the gate timeout of 2s on 1 of 1 target(s)")
	v, st := r.target("supervisor-eu1")
	require.Equal(t, []string{"1.0.0", "Failed"}, []string{v, st}, "it never moved")
	w.sim.SetSupervisor(simulator.SeedSupervisor{Name: "supervisor-eu1"})
	svc := w.waitStatus(t, id, "Healthy")
	require.Equal(t, "1.0.0", svc.Version)
	require.Equal(t, map[string]string{"supervisor-vc1": "1.0.0", "supervisor-eu1": "1.0.0"}, w.ssOwners(t, id))
}

// rolloutToUnreachableWave installs 1.0.0 and upgrades it to 2.0.0 with
// strategy (its second wave, supervisor-eu1's, waits for an approval):
// the canary moves, then supervisor-eu1 stops answering and the second
// wave is approved, so its gate cannot reach it.
func rolloutToUnreachableWave(t *testing.T, strategy string) (*world, string) {
	t.Helper()
	w := newWorld(t, fastRollouts)
	id := rolloutToSecondWave(t, w, strategy, func(string, string) {
		w.sim.SetSupervisor(simulator.SeedSupervisor{Name: "supervisor-eu1", Unreachable: true})
	})
	return w, id
}

// rolloutToSecondWave installs 1.0.0 on w and upgrades it to 2.0.0 with
// strategy, whose second wave waits for an approval: once the first wave
// moved, cut (given the service and 2.0.0's source) takes something away,
// then the second wave is approved. It returns the service.
func rolloutToSecondWave(t *testing.T, w *world, strategy string, cut func(id, src2 string)) string {
	t.Helper()
	id := w.installed(t, w.publish(t, v1))
	src2 := w.publish(t, v2)
	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`,"rollout":{"strategy":`+strategy+`}}`, http.StatusAccepted)
	waitRollout(t, w, id, "WaitingApproval")
	cut(id, src2)
	ok := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/approve", map[string]any{})
	require.Equal(t, http.StatusOK, ok.Status, "%s", ok.Body)
	return id
}

// compatibilityDown makes the lifecycle service's calls to the
// compatibility service about Supervisor sup answer Unavailable while down
// is set, as a peer that is restarting (or one of its instances, down)
// does: a call naming another Supervisor as well gets through.
func compatibilityDown(down *atomic.Bool, sup string) onebox.Option {
	return func(c *app.Config) {
		c.Lifecycle.PeerDialOptions = append(c.Lifecycle.PeerDialOptions, grpc.WithChainUnaryInterceptor(
			func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				about := fmt.Sprint(req)
				if down.Load() && strings.HasPrefix(method, "/vcfservices.compatibility.v1.CompatibilityService/") &&
					strings.Contains(about, sup) && strings.Count(about, "supervisor-") == 1 {
					return status.Error(codes.Unavailable, "compatibility service restarting")
				}
				return invoker(ctx, method, req, reply, cc, opts...)
			}))
	}
}

// Wave 2's gate cannot run because a peer its checks need (the
// compatibility service) answers Unavailable: that is not the target's
// failure nor a block. The rollout waits, Running, naming the check and
// the error, and once the peer is back the wave's checks run and it goes
// on: every target on 2.0.0. An upgrade plan asked while the peer is down
// answers 503 rather than lines blocked by its absence.
func TestRolloutGateWaitsForAPeerThatIsDown(t *testing.T) {
	var down atomic.Bool
	w := newWorld(t, fastRollouts, compatibilityDown(&down, "supervisor-eu1"))
	id := rolloutToSecondWave(t, w, `{"gateTimeout":"5m","waves":[{"name":"canary","regions":["us-west-1"]},{"name":"rest","rest":true,"approval":true}]}`, func(id, src2 string) {
		down.Store(true)
		// A fleet plan asked meanwhile cannot say: 503, not a line blocked
		// by the peer's absence (before, supervisor-eu1's line was blocked).
		status, _, body := fleetPlan(t, w, onebox.OperatorToken, id, map[string]any{"source": src2,
			"rollout": map[string]any{"strategy": map[string]any{"waves": []any{map[string]any{"name": "all", "rest": true}}}}})
		require.Equal(t, http.StatusServiceUnavailable, status, "%s", body)
		require.Contains(t, body, "compatibility service restarting")
	})

	r := poll(t, "wave 2 waiting for the compatibility service", time.Minute, func() rolloutView { return w.rollout(t, id) }, func(r rolloutView) bool {
		return strings.Contains(r.Reason, "cannot run")
	})
	require.Equal(t, "Running", r.State, "a peer that is down is waited for: %+v", r)
	require.Contains(t, r.Reason, "supervisor-eu1: compatibility:", "it names the Supervisor and the check")
	require.Contains(t, r.Reason, "compatibility service restarting", "and the peer's answer")
	v, st := r.target("supervisor-eu1")
	require.Equal(t, "1.0.0", v, "nothing of wave 2 moved (%s)", st)
	require.NotEqual(t, "Blocked", st, "not blocked: its checks did not answer")
	require.NotEqual(t, "Failed", st)

	down.Store(false)
	r = waitRollout(t, w, id, "Succeeded")
	for _, sup := range []string{"supervisor-vc1", "supervisor-eu1"} {
		v, st := r.target(sup)
		require.Equal(t, []string{"2.0.0", "Done"}, []string{v, st}, sup)
	}
	require.Equal(t, map[string]string{"supervisor-vc1": "2.0.0", "supervisor-eu1": "2.0.0"}, w.ssOwners(t, id))
}
