package vcfsm_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// withInventory starts the world on another inventory file.
func withInventory(t testing.TB, yaml string) func(*app.Config) {
	inv := filepath.Join(t.TempDir(), "inventory.yaml")
	require.NoError(t, os.WriteFile(inv, []byte(yaml), 0o600))
	return func(c *app.Config) { c.Lifecycle.InventoryFile = inv }
}

// countNotes counts the service's errorDetails of a severity whose message
// holds every part.
func countNotes(v svcView, severity string, parts ...string) int {
	n := 0
	for _, d := range v.State.ErrorDetails {
		if d.Severity != severity {
			continue
		}
		all := true
		for _, p := range parts {
			all = all && strings.Contains(d.Message, p)
		}
		if all {
			n++
		}
	}
	return n
}

// Everything the checks said stays: an allowed upgrade keeps the
// compatibility step's WARNING and the hook's WARNING and INFO in
// state.errorDetails and in its operation's record, each hook result
// naming the Supervisors that answered it (once, folded); a blocked one
// keeps the compatibility step's notes next to the hook's ERROR.
// Before: the allowed upgrade kept no hook note at all, and a hook ERROR
// dropped the compatibility WARNING.
func TestChecksNotesKept(t *testing.T) {
	hook := newHook(t)
	// supervisor-eu1 says no Kubernetes version: a Kubernetes constraint
	// is a WARNING there (not verified), never an ERROR.
	noK8s := strings.Replace(inventoryYAML, "        kubernetesVersion: v1.31.1+vmware.2\n", "", 1)
	require.NotEqual(t, inventoryYAML, noK8s)
	w := newWorld(t, withHook(hook), withInventory(t, noK8s))
	base := v1
	base.Annotations = hookAnnotations
	base.K8sConstraint = ">=1.30.0"
	id := w.installed(t, w.publish(t, base))

	hook.answer(200, `{"results":[{"severity":"WARNING","message":"Custom resource X will be deprecated in the target version."},{"severity":"INFO","message":"No breaking changes detected."}]}`)
	next := v2
	next.Annotations = hookAnnotations
	next.K8sConstraint = ">=1.30.0"
	patch(t, w, id, `{"source":"`+w.publish(t, next)+`"`+acceptV2+`}`, http.StatusAccepted)
	v := poll(t, "the upgrade to 2.0.0", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Version == "2.0.0" && v.Status == "Healthy" && v.State.Operation != nil && v.State.Operation.Outcome == "Succeeded"
	})
	compat := []string{"supervisor-eu1 reports no Kubernetes version", "2.0.0"}
	require.Equal(t, 1, countNotes(v, "WARN", compat...), "the compatibility WARNING: %+v", v.State.ErrorDetails)
	require.Equal(t, 1, countNotes(v, "WARN", "will be deprecated", "supervisor-eu1", "supervisor-vc1"), "the hook's WARNING, once, naming both Supervisors: %+v", v.State.ErrorDetails)
	require.Equal(t, 1, countNotes(v, "INFO", "No breaking changes", "supervisor-eu1", "supervisor-vc1"), "the hook's INFO: %+v", v.State.ErrorDetails)

	h := w.history(t, id)
	last := h.Operations[len(h.Operations)-1]
	require.Equal(t, "upgrade", last.Type)
	notes := ""
	for _, n := range last.Notes {
		notes += n.Severity + " " + n.Message + "\n"
	}
	require.Contains(t, notes, "WARN "+compat[0])
	require.Contains(t, notes, "will be deprecated")
	require.Contains(t, notes, "INFO pre-check hook")

	// Blocked by the hook: the compatibility step's WARNING stays next to
	// the hook's ERROR and WARNING.
	hook.answer(200, `{"results":[{"severity":"ERROR","message":"backing PVC is not bound"},{"severity":"WARNING","message":"disk nearly full"}]}`)
	third := next
	third.Version = "3.0.0"
	patch(t, w, id, `{"source":"`+w.publish(t, third)+`"}`, http.StatusAccepted)
	v = poll(t, "the upgrade to be refused", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.State != nil && anyError(v, "backing PVC is not bound")
	})
	require.Equal(t, "2.0.0", v.Version)
	require.Equal(t, 1, countNotes(v, "WARN", "supervisor-eu1 reports no Kubernetes version", "3.0.0"), "the compatibility WARNING survives the hook's block: %+v", v.State.ErrorDetails)
	require.Equal(t, 1, countNotes(v, "WARN", "disk nearly full", "supervisor-eu1", "supervisor-vc1"), "%+v", v.State.ErrorDetails)
	own := 0
	for _, d := range v.State.ErrorDetails {
		if d.Severity == "ERROR" && d.Message == "pre-check hook on supervisor-eu1, supervisor-vc1: backing PVC is not bound" {
			own++
		}
	}
	require.Equal(t, 1, own, "the hook's ERROR, its own entry: %+v", v.State.ErrorDetails)

	h = w.history(t, id)
	last = h.Operations[len(h.Operations)-1]
	require.Equal(t, "Failed", last.Outcome)
	notes = ""
	for _, n := range last.Notes {
		notes += n.Severity + " " + n.Message + "\n"
	}
	require.Contains(t, notes, "supervisor-eu1 reports no Kubernetes version")
	require.Contains(t, notes, "disk nearly full")
	require.Contains(t, notes, "backing PVC is not bound")
}

// A refused automatic rollback is an ERROR in state.errorDetails and in
// the failed upgrade's record (before: only logged). Rolling back would
// downgrade the installed SupervisorService, which is refused.
func TestRefusedAutoRollbackShown(t *testing.T) {
	w := newWorld(t)
	id := w.create(t, w.publish(t, v1))
	w.waitStatus(t, id, "Unresolved")
	patch(t, w, id, `{"autoRollback":true}`, http.StatusAccepted)
	w.activate(t, id)
	w.waitStatus(t, id, "Healthy")
	newer := v2
	newer.SSVersion = "2.0.0"
	require.NoError(t, w.sim.InjectFault(simulator.Fault{Kind: "RightBundle", Op: "apply", Effect: simulator.EffectFail}))
	patch(t, w, id, `{"source":"`+w.publish(t, newer)+`"`+acceptV2+`}`, http.StatusAccepted)
	v := poll(t, "the refused automatic rollback", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.State != nil && anyError(v, "the automatic rollback to 1.0.0 was refused")
	})
	require.True(t, anyError(v, "cannot be downgraded"), "%+v", v.State.ErrorDetails)
	require.Equal(t, "Unhealthy", v.Status)
	h := w.history(t, id)
	last := h.Operations[len(h.Operations)-1]
	require.Equal(t, "upgrade", last.Type)
	require.Equal(t, "Failed", last.Outcome)
	found := false
	for _, n := range last.Notes {
		found = found || (n.Severity == "ERROR" && strings.Contains(n.Message, "the automatic rollback to 1.0.0 was refused"))
	}
	require.True(t, found, "the upgrade's record: %+v", last.Notes)
}
