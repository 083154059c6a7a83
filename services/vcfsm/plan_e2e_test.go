package vcfsm_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// fleetPlanView is the subset of an UpgradePlan the fleet plan tests read.
type fleetPlanView struct {
	FromVersion     string   `json:"fromVersion"`
	ToVersion       string   `json:"toVersion"`
	Allowed         bool     `json:"allowed"`
	BlockingReasons []string `json:"blockingReasons"`
	PlanID          string   `json:"planId"`
	ExpiresAt       string   `json:"expiresAt"`
	Compatibility   []struct{ Severity, Kind, Message string }
	Hook            struct {
		Results []struct{ Severity, Message, Subject string }
	} `json:"hook"`
	Targets []struct {
		Supervisor, Region, WaveName, WindowOpens string
		Wave                                      int
		Allowed                                   bool
		Compatibility, Hook                       []struct{ Severity, Message string }
		Resources                                 []struct{ Type, Name, Action, PlannedYaml string }
		BlockingReasons                           []string
	} `json:"targets"`
}

func (p fleetPlanView) target(t testing.TB, sup string) int {
	t.Helper()
	for i, tg := range p.Targets {
		if tg.Supervisor == sup {
			return i
		}
	}
	require.Failf(t, "no line for Supervisor", "%s in %+v", sup, p.Targets)
	return -1
}

// calls is how many requests the hook has answered.
func (h *hookServer) calls() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got)
}

// fleetPlan asks for an upgrade plan (as token) and returns the answer.
func fleetPlan(t testing.TB, w *world, token, id string, body map[string]any) (int, fleetPlanView, string) {
	t.Helper()
	resp := w.box.DoWithToken(t, token, http.MethodPost, "/v2/vcf-services/"+id+"/upgrade-plan", body)
	var p fleetPlanView
	if resp.Status == http.StatusOK {
		resp.JSON(t, &p)
	}
	return resp.Status, p, string(resp.Body)
}

// The upgrade plan with a rollout has a line per Supervisor: its wave, when
// its closed window opens, its compatibility verdict, the hook's answer
// there (a dry run) and its resources. Stored, it is executed as approved
// with planId; a change of the inventory since makes the upgrade refuse it
// (409, saying what changed), as does executing it twice or a plan id that
// is not the service's latest. Viewers may plan, not keep a plan.
func TestFleetPlanStoredAndExecutedAsApproved(t *testing.T) {
	hook := newHook(t)
	w := newWorld(t, fastRollouts, withHook(hook))
	hooked := v1
	hooked.Annotations = hookAnnotations
	id := w.installed(t, w.publish(t, hooked))
	src2 := w.publish(t, ver("2.0.0", map[string]string{"appplatform.vmware.com/compatibility-check_data": `{"check":"ready"}`}))
	closed := strings.Replace(inventoryYAML, "        vcenterName: vcenter2.example.com", `        vcenterName: vcenter2.example.com
        maintenanceWindow: {days: [`+time.Now().UTC().Add(72 * time.Hour).Weekday().String()[:3]+`], start: "00:00", duration: 1h, timeZone: UTC}`, 1)
	putInventory(t, w, closed)
	hook.answer(200, `{"results":[{"severity":"WARNING","message":"clients reconnect once"}]}`)

	var strategy map[string]any
	require.NoError(t, json.Unmarshal([]byte(fmt.Sprintf(canaryThenRest, "")), &strategy))
	ask := map[string]any{"source": src2, "rollout": map[string]any{"strategy": strategy}}

	before := hook.calls()
	status, p, body := fleetPlan(t, w, onebox.ViewerToken, id, ask)
	require.Equal(t, http.StatusOK, status, "a viewer may plan: %s", body)
	require.Empty(t, p.PlanID, "nothing kept without store")
	require.Len(t, p.Targets, 2, "%s", body)
	// The hook is asked once per Supervisor; its answers are both the
	// plan's (one result naming both) and each line's.
	require.Equal(t, 2, hook.calls()-before, "one hook call per Supervisor per plan")
	require.Len(t, p.Hook.Results, 1, "%s", body)
	require.Equal(t, "supervisor-eu1, supervisor-vc1", p.Hook.Results[0].Subject)
	vc1, eu1 := p.Targets[p.target(t, "supervisor-vc1")], p.Targets[p.target(t, "supervisor-eu1")]
	require.Equal(t, []any{1, "canary", "us-west-1", ""}, []any{vc1.Wave, vc1.WaveName, vc1.Region, vc1.WindowOpens})
	require.Equal(t, []any{2, "rest", "eu-central-1"}, []any{eu1.Wave, eu1.WaveName, eu1.Region})
	opens, err := time.Parse(time.RFC3339, eu1.WindowOpens)
	require.NoError(t, err, "eu1's window is closed: the plan says when it opens")
	require.True(t, opens.After(time.Now()))
	for _, tg := range []int{p.target(t, "supervisor-vc1"), p.target(t, "supervisor-eu1")} {
		line := p.Targets[tg]
		require.True(t, line.Allowed, "%+v", line)
		require.Equal(t, "clients reconnect once", line.Hook[0].Message, "the hook's answer on %s", line.Supervisor)
		require.NotEmpty(t, line.Resources, "%s's resources", line.Supervisor)
		var kinds []string
		for _, r := range line.Resources {
			require.Contains(t, []string{"created", "reconfigured", "unchanged", "decommissioned"}, r.Action)
			require.Empty(t, r.PlannedYaml, "the YAML is in the plan's resources, once")
			kinds = append(kinds, r.Type)
		}
		require.Contains(t, kinds, "SupervisorService", "%s's SupervisorService", line.Supervisor)
	}

	ask["store"] = true
	status, _, body = fleetPlan(t, w, onebox.ViewerToken, id, ask)
	require.Equal(t, http.StatusForbidden, status, "keeping a plan is a write: %s", body)
	require.Contains(t, body, "services.write")

	status, p, body = fleetPlan(t, w, onebox.OperatorToken, id, ask)
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.NotEmpty(t, p.PlanID)
	expires, err := time.Parse(time.RFC3339, p.ExpiresAt)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(24*time.Hour), expires, time.Hour)

	// The inventory moves on: the plan is out of date, and says where.
	putInventory(t, w, inventoryYAML)
	resp := patch(t, w, id, `{"planId":"`+p.PlanID+`"}`, http.StatusConflict)
	require.Contains(t, string(resp.Body), "inventory region eu-central-1", "%s", resp.Body)
	require.Equal(t, "1.0.0", w.get(t, id).Version)

	// A fresh plan; an older id is refused; a source other than the
	// plan's is refused; the plan's id alone executes it.
	old := p.PlanID
	status, p, body = fleetPlan(t, w, onebox.OperatorToken, id, ask)
	require.Equal(t, http.StatusOK, status, "%s", body)
	resp = patch(t, w, id, `{"planId":"`+old+`"}`, http.StatusConflict)
	require.Contains(t, string(resp.Body), "is not service")
	src3 := w.publish(t, ver("3.0.0", nil))
	resp = patch(t, w, id, `{"planId":"`+p.PlanID+`","source":"`+src3+`"}`, http.StatusConflict)
	require.Contains(t, string(resp.Body), "differs from plan")

	// 2.0.0's access grants differ from 1.0.0's: executing the plan accepts them.
	patch(t, w, id, `{"planId":"`+p.PlanID+`"`+acceptV2+`}`, http.StatusAccepted)
	r := waitRollout(t, w, id, "Succeeded")
	require.Len(t, r.Waves, 2, "the plan's rollout ran")
	require.Equal(t, "canary", r.Waves[0].Name)
	svc := w.waitStatus(t, id, "Healthy")
	require.Equal(t, "2.0.0", svc.Version)

	resp = patch(t, w, id, `{"planId":"`+p.PlanID+`"}`, http.StatusConflict)
	require.Contains(t, string(resp.Body), "service version", "executed once; the service moved on: %s", resp.Body)
}

// A hook ERROR on one Supervisor blocks that Supervisor's line and the
// plan, which is then not kept even when asked to be.
func TestFleetPlanBlockedLineIsNotKept(t *testing.T) {
	hook := newHook(t)
	w := newWorld(t, withHook(hook))
	hooked := v1
	hooked.Annotations = hookAnnotations
	id := w.installed(t, w.publish(t, hooked))
	src2 := w.publish(t, ver("2.0.0", map[string]string{"appplatform.vmware.com/compatibility-check_data": `{"check":"ready"}`}))
	hook.answer(200, `{"results":[{"severity":"ERROR","message":"backup missing"}]}`)

	var strategy map[string]any
	require.NoError(t, json.Unmarshal([]byte(fmt.Sprintf(canaryThenRest, "")), &strategy))
	status, p, body := fleetPlan(t, w, onebox.OperatorToken, id, map[string]any{"source": src2, "store": true, "rollout": map[string]any{"strategy": strategy}})
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.False(t, p.Allowed)
	require.Empty(t, p.PlanID, "a blocked plan is not kept")
	line := p.Targets[p.target(t, "supervisor-eu1")]
	require.False(t, line.Allowed)
	require.Contains(t, strings.Join(line.BlockingReasons, " "), "backup missing")
	require.Contains(t, strings.Join(p.BlockingReasons, " "), "Supervisor supervisor-eu1: pre-check hook: backup missing")
}

// A target version no trusted key verifies would be refused by every path
// that makes it live (the upgrade's download, each wave of a rollout): the
// plan says so as a blocking ERROR, on every line of a fleet plan, and is
// not kept; a version the vendor signed plans as allowed.
func TestPlanBlockedBySignaturePolicy(t *testing.T) {
	k := newKeysWorld(t)
	id := k.installed(t, k.publishOCI(t, sameTerms("1.0.0"), k.vendor))
	var strategy map[string]any
	require.NoError(t, json.Unmarshal([]byte(fmt.Sprintf(canaryThenRest, "")), &strategy))
	rollout := map[string]any{"strategy": strategy}

	for _, bad := range k.unverifiable() {
		src := k.publishOCI(t, sameTerms(bad.version), bad.sign)
		for _, ask := range []map[string]any{{"source": src}, {"source": src, "rollout": rollout, "store": true}} {
			status, p, body := fleetPlan(t, k.world, onebox.OperatorToken, id, ask)
			require.Equal(t, http.StatusOK, status, "%s", body)
			require.False(t, p.Allowed, "%s: %s", bad.version, body)
			require.Empty(t, p.PlanID, "a blocked plan is not kept")
			reasons := strings.Join(p.BlockingReasons, "\n")
			require.Contains(t, reasons, "signature policy: version "+bad.version+" of ")
			require.Contains(t, reasons, signatureRefused)
			require.Contains(t, reasons, bad.why)
			var sig []string
			for _, c := range p.Compatibility {
				if c.Kind == "SIGNATURE" {
					sig = append(sig, c.Severity)
					require.Contains(t, c.Message, bad.why)
				}
			}
			require.Equal(t, []string{"ERROR"}, sig, "the policy's ERROR among the checks: %s", body)
			if ask["rollout"] == nil {
				require.Empty(t, p.Targets)
				continue
			}
			require.Len(t, p.Targets, 2, "%s", body)
			for _, line := range p.Targets {
				require.False(t, line.Allowed, "no wave may move to %s: %+v", bad.version, line)
				require.Contains(t, strings.Join(line.BlockingReasons, " "), signatureRefused)
			}
		}
	}

	good := k.publishOCI(t, sameTerms("4.0.0"), k.vendor)
	status, p, body := fleetPlan(t, k.world, onebox.OperatorToken, id, map[string]any{"source": good, "rollout": rollout})
	require.Equal(t, http.StatusOK, status, "%s", body)
	require.True(t, p.Allowed, "a version the vendor signed: %s", body)
	require.NotContains(t, body, signatureRefused)
}
