//go:build compose

package composetest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rolloutFaults make the simulated platform hold and fail the rollouts of
// TestComposeRollout: eu1's SupervisorService turns Unhealthy the first
// time it is moved to 2.0.0 (the first rollout fails in its second wave);
// vc1's stays Busy for a while each time it is moved to 1.1.0 (the
// rollback of the first wave takes that long).
const rolloutFaults = `
faults:
  - {scope: supervisor-eu1, kind: SupervisorService, op: apply, version: 2.0.0, times: 1, effect: unhealthy, message: crash-looping}
  - {scope: supervisor-vc1, kind: SupervisorService, op: apply, version: 1.1.0, effect: slow, delay: 15s}
`

// TestComposeRollout is the rollouts' part of `make e2e-compose`, on a
// stack of its own: the replica running a rollout is killed (SIGKILL)
// while the rollout rolls back, then, in a rollout that succeeds, while
// its first wave soaks; each time the other replica takes it over and
// finishes it, and the simulated platform's generations show each
// Supervisor moved exactly once each way.
func TestComposeRollout(t *testing.T) {
	seed, err := os.ReadFile("../../../deploy/simulator-seed.yaml")
	require.NoError(t, err)
	seedFile := filepath.Join(t.TempDir(), "simulator-seed.yaml")
	require.NoError(t, os.WriteFile(seedFile, append(seed, rolloutFaults...), 0o644)) //nolint:gosec // the simulator container reads it
	s := upProject(t, "vcfsm-e2e-rollout", "VCFSM_SIMULATOR_SEED="+seedFile, "VCFSM_ROLLOUT_POLL=250ms")
	var report []string
	t.Cleanup(func() {
		fmt.Println("\n== e2e-compose rollouts (owner TTL " + ownerTTL.String() + ")")
		for _, line := range report {
			fmt.Println("  " + line)
		}
	})
	run := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}

	id := s.create(t, depot("1.1.0"))
	s.activate(t, id)
	s.waitHealthyAt(t, id, "1.1.0")
	installed := s.supervisorServices(t, id)
	require.Len(t, installed, 2, "the demo runs on vc1 (us-west-1) and eu1 (eu-central-1): %v", installed)

	run("kill the owner of a rollout mid-rollback", func(t *testing.T) {
		s.must(t, http.MethodPatch, "/v2/vcf-services/"+id, json.RawMessage(`{"source":"`+depot("2.0.0")+`","rollout":{"strategy":{"waves":[{"name":"west","regions":["us-west-1"]},{"name":"rest","rest":true}]}}}`), http.StatusAccepted)
		// The second wave (eu1) failed and rolled back; the first is
		// being rolled back: vc1 stays Busy on 1.1.0 for a while.
		s.waitRollout(t, id, "the first wave rolling back", func(r rolloutView) bool {
			return r.State == "RollingBack" && r.target("supervisor-eu1") == "1.1.0 RolledBack" && r.target("supervisor-vc1") == "1.1.0 RollingBack"
		})
		owner, took, done := s.killRolloutOwner(t, id, func(r rolloutView) bool { return r.State == "RolledBack" })
		v := s.waitHealthyAt(t, id, "1.1.0")
		require.Equal(t, "1.1.0", v.Version)
		requireStepsOnceEnded(t, s.lastOperation(t, id, "rollout"), "RolledBack")
		moved := s.supervisorServices(t, id)
		for sup, was := range installed {
			require.Equal(t, objectState{Version: "1.1.0", Generation: was.Generation + 2}, moved[sup], "%s moved to 2.0.0 once and back once", sup)
		}
		installed = moved
		report = append(report, fmt.Sprintf("%s killed mid-rollback: taken over after %s, rolled back after %s", owner, took.Round(100*time.Millisecond), done.Round(100*time.Millisecond)))
		s.restartReplica(t, owner)
	})

	run("kill the owner of a rollout mid-wave", func(t *testing.T) {
		s.must(t, http.MethodDelete, "/v2/vcf-service-versions/demo.vcfsm.dev/2.0.0/quarantine", nil, http.StatusOK)
		s.must(t, http.MethodPatch, "/v2/vcf-services/"+id, json.RawMessage(`{"source":"`+depot("2.0.0")+`","rollout":{"strategy":{"waves":[{"name":"west","regions":["us-west-1"],"soak":"20s"},{"name":"rest","rest":true}]}}}`), http.StatusAccepted)
		// The first wave moved and soaks; the second has not moved.
		s.waitRollout(t, id, "the first wave soaking", func(r rolloutView) bool {
			return r.Wave == 1 && r.target("supervisor-vc1") == "2.0.0 Verifying" && r.target("supervisor-eu1") == "1.1.0 Pending"
		})
		owner, took, done := s.killRolloutOwner(t, id, func(r rolloutView) bool { return r.State == "Succeeded" })
		s.waitHealthyAt(t, id, "2.0.0")
		requireStepsOnceEnded(t, s.lastOperation(t, id, "rollout"), "Succeeded")
		moved := s.supervisorServices(t, id)
		for sup, was := range installed {
			require.Equal(t, objectState{Version: "2.0.0", Generation: was.Generation + 1}, moved[sup], "%s moved to 2.0.0 once", sup)
		}
		report = append(report, fmt.Sprintf("%s killed mid-wave: taken over after %s, rollout done after %s", owner, took.Round(100*time.Millisecond), done.Round(100*time.Millisecond)))
		s.restartReplica(t, owner)
	})
}

// rolloutView is the part of a rollout the test reads.
type rolloutView struct {
	State   string `json:"state"`
	Wave    int    `json:"wave"` // 1-based
	Targets []struct {
		Supervisor, Version, State string
	} `json:"targets"`
}

// target is "version state" of a Supervisor in the rollout.
func (r rolloutView) target(sup string) string {
	for _, t := range r.Targets {
		if t.Supervisor == sup {
			return t.Version + " " + t.State
		}
	}
	return ""
}

// rollout reads the service's rollout (none, 404, until it laid its
// waves out).
func (s *stack) rollout(t *testing.T, id string) rolloutView {
	var r rolloutView
	resp := s.mustResponse(t, http.MethodGet, "/v2/vcf-services/"+id+"/rollout", nil, http.StatusOK, http.StatusNotFound)
	if resp.status == http.StatusOK {
		require.NoError(t, json.Unmarshal(resp.body, &r))
	}
	return r
}

// waitRollout polls the service's rollout until ok holds.
func (s *stack) waitRollout(t *testing.T, id, what string, ok func(rolloutView) bool) rolloutView {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		r := s.rollout(t, id)
		if ok(r) {
			return r
		}
		require.True(t, time.Now().Before(deadline), "%s: not %s; last: %+v", id, what, r)
		tick(100 * time.Millisecond)
	}
}

// killRolloutOwner kills (SIGKILL) the replica running the rollout: a
// rollout holds its service only while one of its runs looks at the
// targets (each poll), so it waits to see which replica does. It returns
// that replica, how long after the kill the other one was seen running
// the rollout (or, if it never was, saw it end: only it was left to), and
// how long until ended holds.
func (s *stack) killRolloutOwner(t *testing.T, id string, ended func(rolloutView) bool) (string, time.Duration, time.Duration) {
	owner := ""
	for deadline := time.Now().Add(30 * time.Second); owner == ""; tick(20 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "no replica ran the rollout of %s", id)
		owner = s.owner(t, id)
	}
	killed := time.Now()
	out, err := docker("kill", s.container(t, owner))
	require.NoError(t, err, out)
	var took time.Duration
	for deadline := time.Now().Add(ownerTTL + 2*time.Minute); ; tick(20 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the rollout of %s did not end after %s was killed", id, owner)
		if took == 0 && s.owner(t, id) == other(owner) {
			took = time.Since(killed)
		}
		if ended(s.rollout(t, id)) {
			break
		}
	}
	done := time.Since(killed)
	if took == 0 {
		took = done
	}
	return owner, took, done
}

// restartReplica starts a killed replica again and waits for the stack.
func (s *stack) restartReplica(t *testing.T, name string) {
	out, err := docker("start", s.container(t, name))
	require.NoError(t, err, out)
	s.waitHealthy(t, 2*time.Minute)
}

// objectState is how a SupervisorService stands on its Supervisor.
type objectState struct {
	Version    string
	Generation int64
}

// supervisorServices are the service's SupervisorServices on the
// simulated platform, by Supervisor.
func (s *stack) supervisorServices(t *testing.T, id string) map[string]objectState {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	objs, err := s.sim.List(ctx, id)
	require.NoError(t, err)
	out := map[string]objectState{}
	for _, o := range objs {
		if o.Kind == "SupervisorService" {
			_, dup := out[o.Scope]
			require.False(t, dup, "two SupervisorServices on %s", o.Scope)
			out[o.Scope] = objectState{Version: o.Owner.Version, Generation: o.Generation}
		}
	}
	return out
}

// requireStepsOnceEnded checks the journal of a rollout: it ended as
// outcome and each of its steps is recorded once, Succeeded or Skipped.
func requireStepsOnceEnded(t *testing.T, op operation, outcome string) {
	require.Equal(t, outcome, op.Outcome, "%+v", op)
	op.Outcome = "Succeeded"
	requireStepsOnce(t, op)
}
