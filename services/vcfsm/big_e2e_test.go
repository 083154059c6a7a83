package vcfsm_test

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/store/etcdstore/etcdtest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// bigSupervisors × (1 SupervisorService + 9 registries) = 1,000 resources:
// far above etcd's 128 operations per transaction.
const bigSupervisors = 100

// The lifecycle workflow (create → activate → upgrade → rollback → delete)
// of a service with 1,000 resources, on bbolt and on a real embedded etcd
// with etcd's default limits.
func TestBigServiceWorkflow(t *testing.T) {
	stores := map[string]onebox.Option{
		"bolt": func(c *app.Config) { c.Lifecycle.Store = "bolt" },
		"etcd": func(c *app.Config) {
			c.Lifecycle.Store = "etcd"
			c.Lifecycle.EtcdEndpoints = etcdtest.Start(t)
			c.Lifecycle.EtcdPrefix = "/big/"
		},
	}
	for _, name := range []string{"bolt", "etcd"} {
		t.Run(name, func(t *testing.T) {
			w := newScaleWorldWith(t, bigSupervisors, 1, []onebox.Option{stores[name]},
				scaleVersion("1.0.0", 9, 0, "a", "admin"), scaleVersion("2.0.0", 9, 3, "a", "operator"))
			bigWorkflow(t, w)
		})
	}
}

func bigWorkflow(t *testing.T, w *scaleWorld) {
	const want = bigSupervisors * 10
	id := w.create(t, w.sources[0])
	w.waitStatus(t, id, "Unresolved")
	w.activate(t, id)
	v := waitSettled(t, w.world, id, "1.0.0")
	require.Equal(t, "Healthy", v.Status, "%+v", v.State.ErrorDetails)
	require.Len(t, v.State.Resources, want)
	before := w.owned(t, id)
	require.Len(t, before, want, "every resource once on its target")

	patch(t, w.world, id, `{"source":"`+w.sources[1]+`"}`, http.StatusAccepted)
	v = waitSettled(t, w.world, id, "2.0.0")
	require.Equal(t, "Healthy", v.Status, "%+v", v.State.ErrorDetails)
	require.Len(t, v.State.Resources, want)
	upgraded := w.owned(t, id)
	require.Len(t, upgraded, want)
	for key, owner := range upgraded {
		require.Equal(t, "2.0.0", owner, "%s", key)
	}
	require.NotEqual(t, keysOf(before), keysOf(upgraded), "registries 0-2 went, 9-11 came")

	resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{"targetVersion": "1.0.0"})
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	v = waitSettled(t, w.world, id, "1.0.0")
	require.Equal(t, "Healthy", v.Status, "%+v", v.State.ErrorDetails)
	require.Equal(t, before, w.owned(t, id), "the previous version's resources, owned by it again")

	w.remove(t, id)
	require.Empty(t, w.owned(t, id), "deleting the service cleaned up its 1,000 target resources")
}

// waitSettled waits until the service is at version, Healthy or
// Unhealthy, with no operation running, then returns it.
func waitSettled(t *testing.T, w *world, id, version string) svcView {
	t.Helper()
	return poll(t, id+" at "+version+" with no operation running", 3*time.Minute, func() svcView {
		v := w.get(t, id)
		hist := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil).Body
		if strings.Contains(string(hist), `"outcome":"Running"`) {
			v.Status = "Running"
		}
		return v
	}, func(v svcView) bool {
		return v.Version == version && (v.Status == "Healthy" || v.Status == "Unhealthy")
	})
}

func keysOf(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
