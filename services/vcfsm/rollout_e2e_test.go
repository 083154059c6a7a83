package vcfsm_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// rolloutView is the subset of a Rollout the tests read.
type rolloutView struct {
	OperationID string `json:"operationId"`
	State       string `json:"state"`
	Reason      string `json:"reason"`
	Wave        int    `json:"wave"`
	Waves       []struct {
		Name, State, ApprovedBy string
	} `json:"waves"`
	Targets []struct {
		Supervisor, Version, State, Message, WindowOpens string
		Wave                                             int
	} `json:"targets"`
}

func (r rolloutView) target(sup string) (version, state string) {
	for _, t := range r.Targets {
		if t.Supervisor == sup {
			return t.Version, t.State
		}
	}
	return "", ""
}

// fastRollouts looks at rolled-out targets often.
func fastRollouts(c *app.Config) { c.Lifecycle.RolloutPoll = 20 * time.Millisecond }

// rollout reads the service's rollout; nothing (404) until it laid its
// waves out.
func (w *world) rollout(t testing.TB, id string) rolloutView {
	t.Helper()
	resp := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/rollout", nil)
	var r rolloutView
	if resp.Status != http.StatusNotFound {
		require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
		resp.JSON(t, &r)
	}
	return r
}

// waitRollout waits for the service's rollout to reach state.
func waitRollout(t testing.TB, w *world, id, state string) rolloutView {
	t.Helper()
	return poll(t, "rollout "+state, 90*time.Second, func() rolloutView { return w.rollout(t, id) }, func(r rolloutView) bool { return r.State == state })
}

// ssOwners are the owner versions of the service's SupervisorServices on
// their targets, by Supervisor.
func (w *world) ssOwners(t testing.TB, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for key, v := range w.owned(t, id) {
		if strings.HasPrefix(key, "SupervisorService/") {
			out[strings.Split(key, "/")[1]] = v
		}
	}
	return out
}

const canaryThenRest = `{"waves":[{"name":"canary","regions":["us-west-1"]},{"name":"rest","rest":true%s}]}`

// A rollout moves the canary region first and holds the rest for an
// administrator's approval: meanwhile each Supervisor runs its own version
// (on the target too), the service shows the rollout; a viewer cannot
// approve; once approved the rest moves and the service is back to one
// version, every approval in its history with who gave it.
func TestRolloutInWavesWithApproval(t *testing.T) {
	w := newWorld(t, fastRollouts)
	id := w.installed(t, w.publish(t, v1))
	src2 := w.publish(t, v2)

	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`,"rollout":{"strategy":`+fmt.Sprintf(canaryThenRest, `,"approval":true`)+`}}`, http.StatusAccepted)
	r := waitRollout(t, w, id, "WaitingApproval")
	require.Equal(t, 2, r.Wave, "the rest waits")
	require.Equal(t, "Done", r.Waves[0].State)
	v, st := r.target("supervisor-vc1")
	require.Equal(t, []string{"2.0.0", "Done"}, []string{v, st}, "the canary moved")
	v, st = r.target("supervisor-eu1")
	require.Equal(t, []string{"1.0.0", "Pending"}, []string{v, st}, "the rest did not")
	require.Equal(t, map[string]string{"supervisor-vc1": "2.0.0", "supervisor-eu1": "1.0.0"}, w.ssOwners(t, id), "on the targets too")
	svc := w.get(t, id)
	require.Equal(t, "1.0.0", svc.Version, "the service moves to the new version when every wave is done")
	require.Equal(t, "Maintenance", svc.Status)

	denied := w.box.DoWithToken(t, onebox.ViewerToken, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/approve", map[string]any{})
	require.Equal(t, http.StatusForbidden, denied.Status, "%s", denied.Body)
	denied = w.box.DoWithToken(t, onebox.OperatorToken, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/approve", map[string]any{})
	require.Equal(t, http.StatusForbidden, denied.Status, "approving is an administrator's: %s", denied.Body)
	ok := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/approve", map[string]any{})
	require.Equal(t, http.StatusOK, ok.Status, "%s", ok.Body)

	r = waitRollout(t, w, id, "Succeeded")
	require.Equal(t, "e2e", r.Waves[1].ApprovedBy)
	svc = w.waitStatus(t, id, "Healthy")
	require.Equal(t, "2.0.0", svc.Version)
	require.Equal(t, map[string]string{"supervisor-vc1": "2.0.0", "supervisor-eu1": "2.0.0"}, w.ssOwners(t, id))
	h := w.history(t, id)
	var types []string
	for _, op := range h.Operations {
		types = append(types, op.Type)
		if op.Type == "rollout" {
			require.Equal(t, "Succeeded", op.Outcome)
			var names []string
			for _, s := range op.Steps {
				names = append(names, s.Name)
			}
			require.Equal(t, []string{"download", "configuration", "plan", "maintenance", "wave-1", "wave-2", "promote"}, names)
		}
	}
	require.Contains(t, types, "rollout-approve")
	list := w.box.Do(t, http.MethodGet, "/v2/vcf-services?page=1&pageSize=25&filter="+"rollout.state==Succeeded", nil)
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Body)
	require.Contains(t, string(list.Body), id, "FIQL on the rollout's fields")
}

// Wave 2 fails (its Supervisor's SupervisorService turns Unhealthy) past
// its budget of 0: the rollout rolls back progressively — wave 2, then
// wave 1, each Healthy on the old version before the next — and
// quarantines the version: upgrading to it is refused until an
// administrator clears it.
func TestRolloutFailsAndRollsBackProgressively(t *testing.T) {
	w := newWorld(t, fastRollouts)
	id := w.installed(t, w.publish(t, v1))
	src2 := w.publish(t, v2)
	require.NoError(t, w.sim.InjectFault(simulator.Fault{Scope: "supervisor-eu1", Kind: "SupervisorService", Op: "apply", Effect: simulator.EffectUnhealthy, Times: 1}))

	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`,"rollout":{"strategy":`+fmt.Sprintf(canaryThenRest, "")+`}}`, http.StatusAccepted)
	r := waitRollout(t, w, id, "RolledBack")
	require.Contains(t, r.Reason, "wave rest: 1 of 1 target(s) failed, more than its budget of 0")
	require.Contains(t, r.Reason, "supervisor-eu1")
	for _, sup := range []string{"supervisor-vc1", "supervisor-eu1"} {
		v, st := r.target(sup)
		require.Equal(t, []string{"1.0.0", "RolledBack"}, []string{v, st}, sup)
	}
	svc := w.waitStatus(t, id, "Healthy")
	require.Equal(t, "1.0.0", svc.Version)
	require.Equal(t, map[string]string{"supervisor-vc1": "1.0.0", "supervisor-eu1": "1.0.0"}, w.ssOwners(t, id), "every target back on 1.0.0")
	for key, v := range w.owned(t, id) {
		require.Equal(t, "1.0.0", v, "%s", key)
	}

	// Reverse wave order, each rolled back before the next started.
	resp := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	var hist struct {
		Operations []struct {
			Type, Outcome string
			Steps         []struct{ Name, Status, StartedAt, FinishedAt string }
		} `json:"operations"`
	}
	resp.JSON(t, &hist)
	var rollout *struct{ Name, Status, StartedAt, FinishedAt string }
	for _, op := range hist.Operations {
		if op.Type != "rollout" {
			continue
		}
		require.Equal(t, "RolledBack", op.Outcome)
		var names []string
		var back2, back1 int
		for i, s := range op.Steps {
			names = append(names, s.Name+":"+s.Status)
			switch s.Name {
			case "rollback-wave-2":
				back2 = i
			case "rollback-wave-1":
				back1 = i
			}
		}
		require.Equal(t, []string{"download:Succeeded", "configuration:Succeeded", "plan:Succeeded", "maintenance:Succeeded",
			"wave-1:Succeeded", "wave-2:Succeeded", "promote:Skipped", "rollback-wave-2:Succeeded", "rollback-wave-1:Succeeded", "rolled-back:Succeeded"}, names)
		require.LessOrEqual(t, op.Steps[back2].FinishedAt, op.Steps[back1].StartedAt, "wave 2 back before wave 1 starts")
		rollout = &op.Steps[0]
	}
	require.NotNil(t, rollout, "the rollout is in the history")

	versions := w.box.Do(t, http.MethodGet, "/v2/vcf-service-versions?name="+arcturusName, nil)
	require.Contains(t, string(versions.Body), `"quarantine"`)
	require.Contains(t, string(versions.Body), r.OperationID, "the quarantine names the rollout")
	refused := w.box.Do(t, http.MethodPatch, "/v2/vcf-services/"+id, map[string]any{"source": src2})
	require.Equal(t, http.StatusBadRequest, refused.Status, "%s", refused.Body)
	require.Contains(t, string(refused.Body), "quarantined")

	q := "/v2/vcf-service-versions/" + arcturusName + "/2.0.0/quarantine"
	require.Equal(t, http.StatusForbidden, w.box.DoWithToken(t, onebox.OperatorToken, http.MethodDelete, q, nil).Status)
	cleared := w.box.Do(t, http.MethodDelete, q, nil)
	require.Equal(t, http.StatusOK, cleared.Status, "%s", cleared.Body)
	require.NotContains(t, string(cleared.Body), `"quarantine"`)
	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`}`, http.StatusAccepted)
	poll(t, "the upgrade once cleared", time.Minute, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Version == "2.0.0" && v.Status == "Healthy"
	})
}

// A Supervisor whose maintenance window is closed waits for it; a pause
// holds the rollout, a resume lets it go on; an abort (an administrator's)
// rolls back what moved and quarantines the version.
func TestRolloutWindowsPauseAndAbort(t *testing.T) {
	w := newWorld(t, fastRollouts)
	id := w.installed(t, w.publish(t, v1))
	src2 := w.publish(t, v2)
	closed := strings.Replace(inventoryYAML, "        vcenterName: vcenter2.example.com", `        vcenterName: vcenter2.example.com
        maintenanceWindow: {days: [`+time.Now().UTC().Add(72 * time.Hour).Weekday().String()[:3]+`], start: "00:00", duration: 1h, timeZone: UTC}`, 1)
	putInventory(t, w, closed)

	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`,"rollout":{"strategy":`+fmt.Sprintf(canaryThenRest, "")+`}}`, http.StatusAccepted)
	r := poll(t, "eu1 waiting for its window", time.Minute, func() rolloutView { return w.rollout(t, id) }, func(r rolloutView) bool {
		_, st := r.target("supervisor-eu1")
		return st == "WaitingForWindow"
	})
	for _, tg := range r.Targets {
		if tg.Supervisor == "supervisor-eu1" {
			require.NotEmpty(t, tg.WindowOpens, "it says when the window opens")
		}
	}
	require.Equal(t, http.StatusOK, w.box.DoWithToken(t, onebox.OperatorToken, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/pause", map[string]any{}).Status)
	waitRollout(t, w, id, "Paused")
	require.Equal(t, http.StatusOK, w.box.DoWithToken(t, onebox.OperatorToken, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/resume", map[string]any{}).Status)
	waitRollout(t, w, id, "Running")
	require.Equal(t, http.StatusForbidden, w.box.DoWithToken(t, onebox.OperatorToken, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/abort", map[string]any{"reason": "no"}).Status)
	abort := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/abort", map[string]any{"reason": "the window is too far away"})
	require.Equal(t, http.StatusOK, abort.Status, "%s", abort.Body)

	r = waitRollout(t, w, id, "RolledBack")
	require.Contains(t, r.Reason, "aborted by e2e")
	svc := w.waitStatus(t, id, "Healthy")
	require.Equal(t, "1.0.0", svc.Version)
	require.Equal(t, map[string]string{"supervisor-vc1": "1.0.0", "supervisor-eu1": "1.0.0"}, w.ssOwners(t, id))
	h := w.history(t, id)
	var types []string
	for _, op := range h.Operations {
		types = append(types, op.Type)
	}
	require.Subset(t, types, []string{"rollout-pause", "rollout-resume", "rollout-abort"}, "each recorded in the history")
}

// putInventory replaces the platform inventory (YAML).
func putInventory(t testing.TB, w *world, inv string) {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(inv))
	require.NoError(t, err)
	resp := w.box.Do(t, http.MethodPut, "/v2/inventory", js)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
}

// A Supervisor that does not answer the ownership transfer of the first
// wave's move: the step is retried, and the retry moves the
// SupervisorService (the records written before the transfer must not
// pass for a move already done).
func TestRolloutRetriesAFailedTransfer(t *testing.T) {
	w := newWorld(t, fastRollouts)
	id := w.installed(t, w.publish(t, v1))
	src2 := w.publish(t, v2)
	require.NoError(t, w.sim.InjectFault(simulator.Fault{Scope: "supervisor-vc1", Kind: "SupervisorService", Op: "transfer", Effect: simulator.EffectUnreachable, Times: 1}))

	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`,"rollout":{"strategy":`+fmt.Sprintf(canaryThenRest, "")+`}}`, http.StatusAccepted)
	r := waitRollout(t, w, id, "Succeeded")
	for _, sup := range []string{"supervisor-vc1", "supervisor-eu1"} {
		v, st := r.target(sup)
		require.Equal(t, []string{"2.0.0", "Done"}, []string{v, st}, sup)
	}
	w.waitStatus(t, id, "Healthy")
	require.Equal(t, map[string]string{"supervisor-vc1": "2.0.0", "supervisor-eu1": "2.0.0"}, w.ssOwners(t, id), "on the targets too")
}
