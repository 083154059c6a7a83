package vcfsm_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// configures counts the service's configure operations that ended.
func configures(t testing.TB, w *world, id string) int {
	n := 0
	for _, op := range w.history(t, id).Operations {
		if op.Type == "configure" && op.Outcome == "Succeeded" {
			n++
		}
	}
	return n
}

// PATCH phase accepts all eight of api.md's values, each meaning the work
// it names (docs/decisions.md, "Lifecycle semantics: details"). Before:
// only Configuring, Editing and Publishing were accepted; the other five
// were a 400.
func TestPatchPhaseEveryValue(t *testing.T) {
	w := newWorld(t)
	id := w.create(t, w.publish(t, v1))
	w.waitStatus(t, id, "Unresolved")

	resp := patch(t, w, id, `{"phase":"Running"}`, http.StatusBadRequest)
	for _, p := range []string{"Installing", "Resolving", "Upgrading", "Configuring", "Uninstalling", "Deleting", "Editing", "Publishing"} {
		require.Contains(t, string(resp.Body), p)
	}
	resp = patch(t, w, id, `{"phase":"Configuring"}`, http.StatusBadRequest)
	require.Contains(t, string(resp.Body), "re-applies an active service's configuration; service "+id+" is inactive")

	// Resolving an inactive service: its acceptance against a fresh render.
	grants := string(w.grants(t, id))
	patch(t, w, id, `{"phase":"Resolving","accepted":{"eula":true,"signatures":true,"accessGrants":`+grants+`}}`, http.StatusAccepted)
	require.Equal(t, "Ready", w.get(t, id).Status)

	// Installing an inactive service activates it.
	patch(t, w, id, `{"phase":"Installing"}`, http.StatusAccepted)
	v := w.waitStatus(t, id, "Healthy", "Unhealthy")
	require.Equal(t, "Healthy", v.Status)
	require.Equal(t, "active", v.LifecycleState)

	// On an active service, five phases re-apply its configuration.
	for i, p := range []string{"Configuring", "Editing", "Publishing", "Resolving", "Installing"} {
		patch(t, w, id, `{"phase":"`+p+`"}`, http.StatusAccepted)
		poll(t, p+" re-applied", 60*time.Second, func() int { return configures(t, w, id) }, func(n int) bool { return n == i+1 })
		w.waitStatus(t, id, "Healthy")
	}

	// Upgrading: to the newest registered version.
	resp = patch(t, w, id, `{"phase":"Upgrading"}`, http.StatusBadRequest)
	require.Contains(t, string(resp.Body), "no registered version of "+arcturusName+" newer than 1.0.0")
	w.register(t, v1As("1.1.0"))
	patch(t, w, id, `{"phase":"Upgrading"}`, http.StatusAccepted)
	poll(t, "the upgrade to 1.1.0", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Version == "1.1.0" && v.Status == "Healthy"
	})

	// Uninstalling deactivates; Deleting deletes.
	resp = patch(t, w, id, `{"phase":"Uninstalling","lifecycleState":"paused"}`, http.StatusBadRequest)
	require.Contains(t, string(resp.Body), "send one")
	patch(t, w, id, `{"phase":"Uninstalling"}`, http.StatusAccepted)
	// Deactivation is an operation (it removes the resources): Deleting
	// waits for it to end.
	poll(t, "deactivated", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.LifecycleState == "inactive" && v.Status == "Ready"
	})
	patch(t, w, id, `{"phase":"Deleting"}`, http.StatusAccepted)
	poll(t, "deleted", 60*time.Second, func() int {
		return w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).Status
	}, func(s int) bool { return s == http.StatusNotFound })
}

// PUT replaces the service: id is required (400 naming it); labels,
// locations, tenants, autoUpgrade, autoRollback, autoUpgradePrereleases
// and reconfigure take their defaults when omitted; accepted is kept when
// omitted. Before: a PUT without id was accepted.
func TestPutReplaces(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	patch(t, w, id, `{"labels":{"team":"platform"},"locations":{"region":"us-west-1"},"autoUpgrade":true,"autoRollback":true,"reconfigure":{"events":["new-supervisor"]}}`, http.StatusAccepted)

	resp := w.box.Do(t, http.MethodPut, "/v2/vcf-services/"+id, []byte(`{"values":{},"lifecycleState":"active"}`))
	require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), "id is required in PUT")

	resp = w.box.Do(t, http.MethodPut, "/v2/vcf-services/"+id, []byte(`{"id":"`+id+`","values":{},"lifecycleState":"active","labels":{"tier":"gold"}}`))
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	raw := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil)
	var got map[string]any
	require.NoError(t, json.Unmarshal(raw.Body, &got))
	require.Equal(t, map[string]any{"tier": "gold"}, got["labels"], "replaced")
	require.Equal(t, map[string]any{}, got["locations"], "omitted: cleared")
	require.Equal(t, false, got["autoUpgrade"])
	require.Equal(t, false, got["autoRollback"])
	require.Nil(t, got["reconfigure"], "omitted: cleared")
	accepted := got["accepted"].(map[string]any)
	require.Equal(t, true, accepted["eula"], "omitted: kept")
	require.NotEmpty(t, accepted["accessGrants"], "omitted: kept")
}

// PUT /v2/inventory refuses an inventory missing a field api.md marks
// required, naming the field and the entry. Before: defaultStorageClass,
// vcenterName and storageClasses could be left out.
func TestInventoryRequiredFields(t *testing.T) {
	w := newWorld(t)
	cases := []struct{ drop, want string }{
		{"        defaultStorageClass: gold\n", "inventory.regions[0].supervisors[0] (Supervisor supervisor-vc1).defaultStorageClass is required"},
		{"        vcenterName: vcenter2.example.com\n", "inventory.regions[1].supervisors[0] (Supervisor supervisor-eu1).vcenterName is required"},
		{"    storageClasses: [gold]\n", "inventory.regions[0] (region us-west-1).storageClasses is required"},
		{"        version: 9.0.0.0\n", "inventory.regions[0].supervisors[0] (Supervisor supervisor-vc1).version is required"},
	}
	for _, c := range cases {
		t.Run(strings.TrimSpace(c.drop), func(t *testing.T) {
			inv := strings.Replace(inventoryYAML, c.drop, "", 1)
			require.NotEqual(t, inventoryYAML, inv)
			js, err := yaml.YAMLToJSON([]byte(inv))
			require.NoError(t, err)
			resp := w.box.Do(t, http.MethodPut, "/v2/inventory", js)
			require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
			require.Contains(t, string(resp.Body), c.want)
		})
	}
	js, err := yaml.YAMLToJSON([]byte(inventoryYAML))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, w.box.Do(t, http.MethodPut, "/v2/inventory", js).Status, "a complete inventory is taken")
}

// ResourceInfo.resourceYaml is the custom resource as applied, for
// debugging. Before: never emitted.
func TestResourceYAMLShown(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	v := w.get(t, id)
	require.NotEmpty(t, v.State.Resources)
	for _, r := range v.State.Resources {
		var doc map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(r.ResourceYaml), &doc), "%s %s", r.Type, r.ResourceYaml)
		require.Equal(t, r.Type, doc["kind"], "%s", r.ResourceYaml)
	}
	st := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/state", nil)
	require.Contains(t, string(st.Body), `"resourceYaml":"apiVersion: services.vcfa.broadcom.com/v2`)
}
