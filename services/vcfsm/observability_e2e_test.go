package vcfsm_test

import (
	"context"
	"math"
	"net/http"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// metrics is one scrape of /metrics.
type metrics map[string]*dto.MetricFamily

func scrape(t testing.TB, url string) metrics {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test scrape on loopback
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// value sums the series of name whose labels include want: counter and
// gauge values, histogram sample counts.
func (m metrics) value(name string, want map[string]string) float64 {
	fam, ok := m[name]
	if !ok {
		return 0
	}
	total := 0.0
	for _, s := range fam.GetMetric() {
		if !hasLabels(s, want) {
			continue
		}
		switch {
		case s.GetCounter() != nil:
			total += s.GetCounter().GetValue()
		case s.GetGauge() != nil:
			total += s.GetGauge().GetValue()
		case s.GetHistogram() != nil:
			total += float64(s.GetHistogram().GetSampleCount())
		}
	}
	return total
}

func hasLabels(s *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range s.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// labelValues lists the values label takes in name's series.
func (m metrics) labelValues(name, label string) []string {
	var out []string
	for _, s := range m[name].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == label && !slices.Contains(out, l.GetValue()) {
				out = append(out, l.GetValue())
			}
		}
	}
	slices.Sort(out)
	return out
}

type historyView struct {
	Operations []struct {
		Type, Outcome, ToVersion, RequestedBy string
		Steps                                 []struct{ Name, Status, Message string }
		Notes                                 []struct{ Type, Severity, Message string }
	} `json:"operations"`
}

func (w *world) history(t testing.TB, id string) historyView {
	t.Helper()
	resp := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var h historyView
	resp.JSON(t, &h)
	return h
}

// succeededSteps counts the steps the operations of type typ ran to success.
func (h historyView) succeededSteps(typ string) int {
	n := 0
	for _, op := range h.Operations {
		if op.Type != typ {
			continue
		}
		for _, s := range op.Steps {
			if s.Status == "Succeeded" {
				n++
			}
		}
	}
	return n
}

// upgradeWithHook installs v1 with a pre-check hook and upgrades it to
// 2.0.0 (whose data the hook checks), returning the service id and the
// number of hook calls the hook server answered.
func upgradeWithHook(t *testing.T, w *world, hook *hookServer) (string, int) {
	t.Helper()
	hooked := v1
	hooked.Annotations = hookAnnotations
	id := w.installed(t, w.publish(t, hooked))
	src2 := w.publish(t, ver("2.0.0", map[string]string{"appplatform.vmware.com/compatibility-check_data": `{"check":"ready"}`}))
	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`}`, http.StatusAccepted)
	poll(t, "upgrade to 2.0.0", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Version == "2.0.0" && v.Status == "Healthy"
	})
	hook.mu.Lock()
	defer hook.mu.Unlock()
	require.NotEmpty(t, hook.got, "the upgrade called the hook")
	return id, len(hook.got)
}

// The counters move by exactly what an install and an upgrade did.
func TestMetricsCountWhatHappened(t *testing.T) {
	hook := newHook(t)
	w := newWorld(t, withHook(hook))
	before := scrape(t, w.box.MetricsURL)
	id, hookCalls := upgradeWithHook(t, w, hook)
	after := scrape(t, w.box.MetricsURL)
	// Every series compared is a count of events, an integer.
	delta := func(name string, labels map[string]string) int {
		return int(math.Round(after.value(name, labels) - before.value(name, labels)))
	}
	now := func(name string, labels map[string]string) int { return int(math.Round(after.value(name, labels))) }
	l := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}

	// Operations: one register, one activate, one upgrade, all succeeded.
	for _, typ := range []string{"register", "activate", "upgrade"} {
		require.Equal(t, 1, delta("vcfsm_lifecycle_operations_started_total", l("type", typ)), typ)
		require.Equal(t, 1, delta("vcfsm_lifecycle_operations_finished_total", l("type", typ, "outcome", "Succeeded")), typ)
	}
	require.Equal(t, 3, delta("vcfsm_lifecycle_operations_finished_total", nil), "no other run ended")
	require.Equal(t, 0, delta("vcfsm_lifecycle_operations_resumed_total", nil))

	// Steps: one observation per step the history shows succeeded.
	hist := w.history(t, id)
	for _, typ := range []string{"activate", "upgrade"} {
		n := hist.succeededSteps(typ)
		require.Positive(t, n, typ)
		require.Equal(t, n, delta("vcfsm_lifecycle_step_duration_seconds", l("type", typ, "result", "succeeded")), typ)
		require.Equal(t, 0, delta("vcfsm_lifecycle_step_duration_seconds", l("type", typ, "result", "failed")), typ)
	}

	// The hook calls the hook server answered, all passed, made in one
	// gRPC DispatchHooks call (seen on both ends).
	t.Logf("hook calls: %d", hookCalls)
	require.Equal(t, hookCalls, delta("vcfsm_precheck_hook_calls_total", nil))
	require.Equal(t, hookCalls, delta("vcfsm_precheck_hook_calls_total", l("outcome", "passed")))
	require.Equal(t, hookCalls, delta("vcfsm_precheck_hook_duration_seconds", l("outcome", "passed")))
	require.Equal(t, 1, delta("grpc_server_handled_total", l("grpc_method", "DispatchHooks", "grpc_code", "OK")))
	require.Equal(t, 1, delta("grpc_client_handled_total", l("grpc_method", "DispatchHooks", "grpc_code", "OK")))
	require.Positive(t, delta("vcfsm_precheck_dynamic_checks_total", l("result", "Passed")))

	// REST: two PATCHes on the service route (activate, upgrade), counted
	// by route pattern, never by path.
	require.Equal(t, 2, delta("vcfsm_http_requests_total", l("method", "PATCH", "route", "/v2/vcf-services/{id}", "code", "202")))
	require.Equal(t, 1, delta("vcfsm_http_requests_total", l("method", "POST", "route", "/v2/vcf-services", "code", "200")))
	for _, route := range after.labelValues("vcfsm_http_requests_total", "route") {
		require.NotContains(t, route, id, "a route label carries a service id")
	}

	// The other services' work, and the store's.
	require.Positive(t, delta("vcfsm_renderer_renders_total", l("outcome", "ok")))
	require.Positive(t, delta("vcfsm_compatibility_evaluations_total", l("kind", "upgrade", "result", "compatible")))
	require.Positive(t, delta("vcfsm_store_transaction_duration_seconds", l("backend", "bolt", "kind", "update", "result", "ok")))
	require.Positive(t, delta("vcfsm_lifecycle_reconcile_duration_seconds", l("system", "supervisor")))
	require.Equal(t, 0, delta("vcfsm_renderer_renders_killed_total", nil))
	require.Positive(t, now("vcfsm_renderer_pool_workers", nil))

	// Gauges: the one service is active and Healthy; nothing is queued.
	require.Equal(t, 1, now("vcfsm_lifecycle_services", l("status", "Healthy", "lifecycle_state", "active")))
	require.Equal(t, 1, now("vcfsm_lifecycle_services", nil))
	require.Equal(t, 0, now("vcfsm_lifecycle_operation_queue_depth", nil))
}

// A caller's X-Request-Id comes back; without one the gateway makes one.
func TestRequestIDAcceptedOrGenerated(t *testing.T) {
	w := newWorld(t)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, w.box.URL+"/v2/vcf-services", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+onebox.Token)
	req.Header.Set("Accept", "application/json;version=41.0.0-alpha")
	req.Header.Set("X-Request-Id", "caller-chosen-id-42")
	resp, err := w.box.Client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "caller-chosen-id-42", resp.Header.Get("X-Request-Id"))

	got := w.box.Do(t, http.MethodGet, "/v2/vcf-services", nil)
	require.Regexp(t, `^[0-9a-f]{32}$`, got.Header.Get("X-Request-Id"))
	require.Empty(t, got.Header.Get("Grpc-Metadata-X-Vcfsm-Principal"), "the principal header stays inside")
}
