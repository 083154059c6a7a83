package vcfsm_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

// modelRun is one cell being driven: a fresh service brought to the row
// for real, then the column's action.
type modelRun struct {
	w   *world
	s   *modelService
	row modelRow
	// open releases a gated download (the registering row).
	open chan struct{}
}

const reachTimeout = 90 * time.Second

// holdFor is how long a hang fault holds an operation inside a step (the
// installing and upgrading rows): the action is applied meanwhile.
const holdFor = 8 * time.Second

func (m *modelRun) view() (view, error) { return observe(m.w.box, m.s.id) }

// waitView polls until ok holds for the service.
func (m *modelRun) waitView(what string, ok func(view) bool) (view, error) {
	var last view
	err := until(reachTimeout, func() (bool, error) {
		v, err := m.view()
		last = v
		return err == nil && ok(v), err
	})
	if err != nil {
		return last, fmt.Errorf("waiting for %s: %w; last seen %s phase %q version %s operation %s/%s %q",
			what, err, last.End(), last.Phase, last.Version, last.Step, last.Outcome, last.OpMessage)
	}
	return last, nil
}

// status waits for one of the statuses, its operation (if any) over.
func (m *modelRun) status(want ...string) error {
	_, err := m.waitView(strings.Join(want, "|"), func(v view) bool {
		return slices.Contains(want, v.Status) && !running(v)
	})
	return err
}

// running: the service's last operation has not ended.
func running(v view) bool {
	return !slices.Contains([]string{"Succeeded", "Failed", "RolledBack", "Stuck"}, v.Outcome)
}

func (m *modelRun) create(source string) error {
	r, err := call(m.w.box, http.MethodPost, "/v2/vcf-services", map[string]any{"source": source})
	if err != nil {
		return err
	}
	if r.Status != http.StatusOK {
		return fmt.Errorf("create: %s", r)
	}
	var v svcView
	if err := json.Unmarshal(r.Body, &v); err != nil {
		return err
	}
	m.s.id = v.ID
	return nil
}

func (m *modelRun) patch(body string, want int) error {
	r, err := call(m.w.box, http.MethodPatch, "/v2/vcf-services/"+m.s.id, body)
	if err == nil && r.Status != want {
		err = fmt.Errorf("PATCH %s: want %d, got %s", body, want, r)
	}
	return err
}

// grants is the acceptance of what render-access-grants says (the static
// form when the bundle is not downloaded yet).
func (m *modelRun) grants() string {
	r, err := call(m.w.box, http.MethodPost, "/v2/vcf-services/"+m.s.id+"/render-access-grants", map[string]any{})
	if err != nil || r.Status != http.StatusOK {
		return `{"VCF Automation":{"GlobalRole":["` + m.s.role + `"]}}`
	}
	return string(r.Body)
}

func (m *modelRun) acceptance() string {
	return `"accepted":{"eula":true,"signatures":true,"accessGrants":` + m.grants() + `}`
}

func (m *modelRun) unresolved() error {
	if err := m.create(m.s.v1); err != nil {
		return err
	}
	return m.status("Unresolved")
}

func (m *modelRun) activate() error {
	return m.patch(`{"lifecycleState":"active",`+m.acceptance()+`}`, http.StatusAccepted)
}

func (m *modelRun) installed() error {
	if err := m.unresolved(); err != nil {
		return err
	}
	if err := m.activate(); err != nil {
		return err
	}
	return m.status("Healthy")
}

func (m *modelRun) inject(f simulator.Fault) error { return m.w.sim.InjectFault(f) }

// reach brings a fresh service to the row.
func (m *modelRun) reach() error {
	switch m.row.Key {
	case "registering":
		m.s.gate(m.w, m.open)
		if err := m.create(m.s.v1); err != nil {
			return err
		}
		_, err := m.waitView("registering", func(v view) bool { return v.Status == "Busy" })
		return err
	case "unresolved":
		return m.unresolved()
	case "ready":
		if err := m.unresolved(); err != nil {
			return err
		}
		if err := m.patch(`{`+m.acceptance()+`}`, http.StatusAccepted); err != nil {
			return err
		}
		return m.status("Ready")
	case "download-failed":
		if err := m.create(strings.TrimSuffix(m.s.v1, ".tar") + "-missing.tar"); err != nil {
			return err
		}
		return m.status("Unhealthy")
	case "installing":
		if err := m.unresolved(); err != nil {
			return err
		}
		if err := m.inject(m.s.roleFault("apply", simulator.EffectHang, holdFor, 1)); err != nil {
			return err
		}
		if err := m.activate(); err != nil {
			return err
		}
		_, err := m.waitView("installing", func(v view) bool { return v.State == "active" && v.Status == "Busy" })
		return err
	case "unhealthy":
		if err := m.unresolved(); err != nil {
			return err
		}
		if err := m.inject(m.s.roleFault("apply", simulator.EffectUnhealthy, 0, 0)); err != nil {
			return err
		}
		if err := m.activate(); err != nil {
			return err
		}
		return m.status("Unhealthy")
	}
	return m.reachActive()
}

// reachActive reaches the rows that start from an installed service.
func (m *modelRun) reachActive() error {
	if err := m.installed(); err != nil {
		return err
	}
	switch m.row.Key {
	case "healthy":
		return nil
	case "deactivated":
		if err := m.patch(`{"lifecycleState":"inactive"}`, http.StatusAccepted); err != nil {
			return err
		}
		_, err := m.waitView("inactive", func(v view) bool { return v.State == "inactive" && v.Status == "Ready" })
		return err
	case "paused":
		return m.patch(`{"lifecycleState":"paused"}`, http.StatusAccepted)
	case "upgrading":
		held := m.s.secretFault("model-extra", "apply", simulator.EffectHang)
		held.Delay, held.Times = simulator.Duration(holdFor), 1
		if err := m.inject(held); err != nil {
			return err
		}
		if err := m.patch(`{"source":"`+m.s.v2+`"}`, http.StatusAccepted); err != nil {
			return err
		}
		// Held while its resources move: it points at 2.0.0 already.
		_, err := m.waitView("maintenance", func(v view) bool { return v.Status == "Maintenance" && v.Version == "2.0.0" })
		return err
	case "upgrade-failed":
		if err := m.inject(m.s.secretFault("model-extra", "apply", simulator.EffectFail)); err != nil {
			return err
		}
		if err := m.patch(`{"source":"`+m.s.v2+`"}`, http.StatusAccepted); err != nil {
			return err
		}
		v, err := m.waitView("the upgrade to fail", func(v view) bool { return v.Outcome != "" && !running(v) })
		// Decided (issue 24): a partial upgrade leaves the service Unhealthy,
		// held in maintenance until a rollback or a retry.
		if err == nil && v.Status != "Unhealthy" {
			err = fmt.Errorf("a partially failed upgrade ends %s (operation %s), not active/Unhealthy", v.End(), v.Outcome)
		}
		return err
	case "unavailable":
		if err := m.inject(m.s.secretFault("model-secret", "*", simulator.EffectUnreachable)); err != nil {
			return err
		}
		_, err := m.waitView("Unavailable", func(v view) bool { return v.Status == "Unavailable" })
		return err
	case "delete-failed":
		if err := m.inject(m.s.roleFault("delete", simulator.EffectFail, 0, 0)); err != nil {
			return err
		}
		if r, err := call(m.w.box, http.MethodDelete, "/v2/vcf-services/"+m.s.id, nil); err != nil || r.Status != http.StatusAccepted {
			return fmt.Errorf("DELETE: %v: %w", r, err)
		}
		_, err := m.waitView("the deletion to fail", func(v view) bool {
			return v.State == "decommissioned" && v.Status == "Unhealthy" && !running(v)
		})
		return err
	}
	return fmt.Errorf("row %s: no way to reach it", m.row.Key)
}

var overwrite = base64.StdEncoding.EncodeToString([]byte("hookCA: model\n"))

const rolloutWaves = `{"gateTimeout":"5s","waves":[{"name":"canary","regions":["us-west-1"]},{"name":"rest","rest":true}]}`

// act applies the column's action and returns its answer.
func (m *modelRun) act(col string) (reply, error) {
	base := "/v2/vcf-services/" + m.s.id
	put := func(state string) (reply, error) {
		return call(m.w.box, http.MethodPut, base, `{"id":"`+m.s.id+`","values":{},"lifecycleState":"`+state+`"}`)
	}
	patch := func(body string) (reply, error) { return call(m.w.box, http.MethodPatch, base, body) }
	switch col {
	case "create":
		return call(m.w.box, http.MethodPost, "/v2/vcf-services", map[string]any{"source": m.s.v1})
	case "values":
		return patch(`{"values":{"userOverwrite":"` + overwrite + `"}}`)
	case "activate":
		return patch(`{"lifecycleState":"active",` + m.acceptance() + `}`)
	case "deactivate":
		return patch(`{"lifecycleState":"inactive"}`)
	case "pause":
		return patch(`{"lifecycleState":"paused"}`)
	case "accepted":
		return patch(`{` + m.acceptance() + `}`)
	case "source":
		return patch(`{"source":"` + m.s.v2 + `"}`)
	case "labels":
		return patch(`{"labels":{"model":"yes"}}`)
	case "phase":
		return patch(`{"phase":"Configuring"}`)
	case "put":
		state := m.row.State
		if state == "decommissioned" {
			state = "active"
		}
		return put(state)
	case "put-decommissioned":
		return put("decommissioned")
	case "delete":
		return call(m.w.box, http.MethodDelete, base, nil)
	case "delete-force":
		return call(m.w.box, http.MethodDelete, base+"?forceDelete=true", nil)
	case "rollback":
		return call(m.w.box, http.MethodPost, base+"/rollback", map[string]any{})
	}
	return m.actAutomatic(col)
}

// actAutomatic applies the actions the Service Manager takes by itself.
func (m *modelRun) actAutomatic(col string) (reply, error) {
	base := "/v2/vcf-services/" + m.s.id
	switch col {
	case "supervisor-upgrade":
		return call(m.w.box, http.MethodPost, "/v2/supervisors/supervisor-vc1/upgrade-check", map[string]any{"targetVersion": "9.5.0.0"})
	case "auto-upgrade":
		r, err := call(m.w.box, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": m.s.v2})
		if err != nil || r.Status != http.StatusOK {
			return r, fmt.Errorf("register 2.0.0 in the catalog: %v %w", r, err)
		}
		return call(m.w.box, http.MethodPatch, base, `{"autoUpgrade":true}`)
	case "auto-rollback":
		if err := m.inject(m.s.secretFault("model-extra", "apply", simulator.EffectFail)); err != nil {
			return reply{}, err
		}
		return call(m.w.box, http.MethodPatch, base, `{"autoRollback":true,"source":"`+m.s.v2+`"}`)
	case "reconcile":
		err := m.w.sim.Delete(context.Background(), m.s.roleKey())
		if errors.Is(err, target.ErrNotFound) || errors.Is(err, target.ErrRejected) {
			err = nil // nothing to delete, or the target refuses (the delete-failed row)
		}
		return reply{Status: http.StatusOK}, err
	case "rollout":
		return call(m.w.box, http.MethodPatch, base, `{"source":"`+m.s.v2+`","rollout":{"strategy":`+rolloutWaves+`}}`)
	}
	return reply{}, fmt.Errorf("column %s: no action", col)
}
