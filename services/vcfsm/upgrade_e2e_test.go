package vcfsm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// v2 changes every kind of resource: the GlobalRole's rights change
// (reconfigured), the service account goes (decommissioned), a right
// bundle comes (created), the SupervisorServices stay (unchanged).
var v2 = arcturusVersion{Version: "2.0.0", SSVersion: "1.0.0", Rights: []string{"RIGHT_ORGANIZATION_VIEW", "RIGHT_ORG_TRAVERSE"}, RightBundle: true}

type planView struct {
	FromVersion     string   `json:"fromVersion"`
	ToVersion       string   `json:"toVersion"`
	Allowed         bool     `json:"allowed"`
	BlockingReasons []string `json:"blockingReasons"`
	SuggestedPath   []string `json:"suggestedPath"`
	Resources       []struct {
		Type, Name, Supervisor, Action string
	} `json:"resources"`
	Hook *struct {
		Configured bool
		Failure    string
		Results    []struct{ Severity, Message string }
	} `json:"hook"`
	DynamicChecks *struct {
		PreCheckStatus string `json:"preCheckStatus"`
	} `json:"dynamicChecks"`
}

func (w *world) plan(t testing.TB, id, source string) planView {
	t.Helper()
	resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/upgrade-plan", map[string]any{"source": source})
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var p planView
	resp.JSON(t, &p)
	return p
}

func actions(p planView) map[string]string {
	out := map[string]string{}
	for _, r := range p.Resources {
		out[r.Type+"/"+r.Supervisor+"/"+r.Name] = r.Action
	}
	return out
}

// owned maps "<kind>/<identity>" to the owner version on the targets.
func (w *world) owned(t testing.TB, id string) map[string]string {
	t.Helper()
	objs, err := w.sim.List(context.Background(), id)
	require.NoError(t, err)
	out := map[string]string{}
	for _, o := range objs {
		key := o.Kind + "/" + o.Scope + "/" + o.Identity
		_, dup := out[key]
		require.False(t, dup, "duplicate target resource %s", key)
		out[key] = o.Owner.Version
	}
	return out
}

// The preview matches what the upgrade then does; the upgrade passes
// through Maintenance/Upgrading to Healthy.
func TestUpgradePreviewThenUpgrade(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	src2 := w.publish(t, v2)

	p := w.plan(t, id, src2)
	require.True(t, p.Allowed, "%v", p.BlockingReasons)
	require.Equal(t, "1.0.0", p.FromVersion)
	require.Equal(t, "2.0.0", p.ToVersion)
	require.Equal(t, "Passed", p.DynamicChecks.PreCheckStatus)
	acts := actions(p)
	require.Equal(t, "reconfigured", acts["GlobalRole//arcturus-admin"])
	require.Equal(t, "decommissioned", acts["VcfaServiceAccount//arcturus-sa"])
	require.Equal(t, "created", acts["RightBundle//arcturus-rights"])
	require.Equal(t, "unchanged", acts["SupervisorService/supervisor-vc1/arcturus-install"])
	require.Equal(t, "decommissioned", acts["UserInterfacePlugin//arcturus-ui"], "v2 ships no UI plugin")
	require.Equal(t, "1.0.0", w.get(t, id).Version, "a preview changes nothing")

	// Observe the upgrade through a watch.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	events := w.watch(t, ctx, id)
	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`}`, http.StatusAccepted)
	sawMaintenance := false
	for ev := range events {
		if ev.Status == "Maintenance" && ev.Phase == "Upgrading" {
			sawMaintenance = true
		}
		if ev.Status == "Healthy" && ev.Version == "2.0.0" {
			break
		}
		require.NotEqual(t, "Unhealthy", ev.Status)
	}
	require.True(t, sawMaintenance, "the current version went through maintenance mode")
	v := w.get(t, id)
	require.Equal(t, "2.0.0", v.Version)
	require.Equal(t, "Healthy", v.Status)

	// The targets now hold exactly what the plan said, all owned by 2.0.0.
	owned := w.owned(t, id)
	require.Len(t, owned, 4, "%v", owned)
	for k, ver := range owned {
		require.Equal(t, "2.0.0", ver, k)
	}
	require.Contains(t, owned, "RightBundle//arcturusRightsBundle")
	_, err := w.sim.Get(context.Background(), target.Key{System: target.SystemVCFA, Kind: "VcfaServiceAccount", Identity: "arcturus-service-account"})
	require.ErrorIs(t, err, target.ErrNotFound, "a removed resource is decommissioned on its target")
	role, err := w.sim.Get(context.Background(), target.Key{System: target.SystemVCFA, Kind: "GlobalRole", Identity: "Arcturus Administrator"})
	require.NoError(t, err)
	require.Contains(t, fmt.Sprint(role.Spec), "RIGHT_ORG_TRAVERSE", "a reconfigured resource got its new spec")

	hist := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	require.Contains(t, string(hist.Body), `"type":"upgrade"`)
	require.Contains(t, string(hist.Body), `"lastKnownGoodVersion":"2.0.0"`)
}

type event struct {
	Status, Phase, LifecycleState, Version string
}

func (w *world) watch(t testing.TB, ctx context.Context, id string) <-chan event {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.box.URL+"/v2/vcf-services/"+id+"/watch", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer onebox-test-token-0123456789abcdef")
	resp, err := w.box.Client.Do(req) //nolint:bodyclose // the goroutine below closes it when the stream ends; bodyclose does not follow go statements
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := make(chan event)
	go func() {
		defer close(out)
		defer func() { _ = resp.Body.Close() }()
		dec := json.NewDecoder(resp.Body)
		for {
			var m struct {
				Result event `json:"result"`
			}
			if err := dec.Decode(&m); err != nil {
				return
			}
			select {
			case out <- m.Result:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// hookServer is a pre-check hook answering with a configurable response.
type hookServer struct {
	*httptest.Server
	mu     sync.Mutex
	status int
	body   string
	delay  time.Duration
	got    []string
}

func newHook(t testing.TB) *hookServer {
	h := &hookServer{status: 200, body: `{"results":[]}`}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.got = append(h.got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization")+" "+string(b))
		status, body, delay := h.status, h.body, h.delay
		h.mu.Unlock()
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookServer) answer(status int, body string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.status, h.body = status, body
}

const hookHost = "arcturus-hook.svc-arcturus-galaxy-com.svc.cluster.local"

func withHook(h *hookServer) func(*app.Config) {
	return func(c *app.Config) {
		c.Precheck.Resolve = []string{hookHost + "=" + h.Listener.Addr().String()}
	}
}

var hookAnnotations = map[string]string{
	"appplatform.vmware.com/compatibility-check_service": "arcturus-hook",
	"appplatform.vmware.com/compatibility-check_url":     "precheck/v1",
	"appplatform.vmware.com/compatibility-check_method":  "POST",
}

// Each blocking cause leaves the installed version active and Healthy with
// the reason in errorDetails.
func TestUpgradeBlocked(t *testing.T) {
	hook := newHook(t)
	w := newWorld(t, withHook(hook))
	hooked := v1
	hooked.Annotations = merge(hookAnnotations, map[string]string{"appplatform.vmware.com/destination-version-upgrade-constraints": "<3.0.0"})
	id := w.installed(t, w.publish(t, hooked))

	targetData := map[string]string{"appplatform.vmware.com/compatibility-check_data": `{"check":"storage-migration-ready"}`}
	cases := []struct {
		name     string
		version  arcturusVersion
		hook     func()
		mentions string
	}{
		{"source constraint", ver("2.0.0", map[string]string{"appplatform.vmware.com/source-version-upgrade-constraints": ">=1.5.0"}), nil, ">=1.5.0"},
		{"destination constraint", ver("3.0.0", nil), nil, "<3.0.0"},
		{"supervisor constraint", ver("2.1.0", map[string]string{"appplatform.vmware.com/supervisor-version-constraints": ">=9.2.0.0"}), nil, ">=9.2.0.0"},
		{"kubernetes constraint", func() arcturusVersion { v := ver("2.2.0", nil); v.K8sConstraint = ">=1.32.0"; return v }(), nil, ">=1.32.0"},
		{"hook ERROR", ver("2.3.0", targetData), func() {
			hook.answer(200, `{"results":[{"severity":"error","message":"backing PVC is not bound"}]}`)
		}, "backing PVC is not bound"},
		{"hook non-200", ver("2.4.0", targetData), func() { hook.answer(503, "maintenance window closed") }, "maintenance window closed"},
		{"hook bad body", ver("2.5.0", targetData), func() { hook.answer(200, "<html>oops</html>") }, "Invalid response body"},
		{"schema mismatch", func() arcturusVersion {
			v := ver("2.6.0", nil)
			return v
		}(), nil, "tier"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hook.answer(200, `{"results":[{"severity":"INFO","message":"fine"}]}`)
			if c.hook != nil {
				c.hook()
			}
			spec := c.version
			src := w.publishSpec(t, spec, c.name == "schema mismatch")
			p := w.plan(t, id, src)
			require.False(t, p.Allowed)
			require.Contains(t, strings.Join(p.BlockingReasons, " | "), c.mentions)

			patch(t, w, id, `{"source":"`+src+`"`+acceptV2+`}`, http.StatusAccepted)
			v := poll(t, "the upgrade to be refused", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
				return v.State != nil && anyError(v, c.mentions)
			})
			require.Equal(t, "1.0.0", v.Version)
			require.Equal(t, "active", v.LifecycleState)
			v = w.waitStatus(t, id, "Healthy")
			require.Equal(t, "1.0.0", v.Version, "the installed version stays")
			for k, ver := range w.owned(t, id) {
				require.Equal(t, "1.0.0", ver, "%s changed owner", k)
			}
		})
	}
	// The hook got the target version's _data as its body, with a token.
	hook.mu.Lock()
	defer hook.mu.Unlock()
	require.NotEmpty(t, hook.got)
	require.Contains(t, strings.Join(hook.got, "\n"), `POST /precheck/v1 Bearer `)
	require.Contains(t, strings.Join(hook.got, "\n"), `{"check":"storage-migration-ready"}`)
}

func anyError(v svcView, mention string) bool {
	for _, d := range v.State.ErrorDetails {
		if d.Severity == "ERROR" && strings.Contains(d.Message, mention) {
			return true
		}
	}
	return false
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func ver(version string, annotations map[string]string) arcturusVersion {
	v := v2
	v.Version = version
	v.Annotations = annotations
	return v
}

// publishSpec publishes a version, optionally with a values schema that
// the current configuration does not satisfy (a new required property).
func (w *world) publishSpec(t testing.TB, v arcturusVersion, requireTier bool) string {
	t.Helper()
	if !requireTier {
		return w.publish(t, v)
	}
	w.schemaPatch = func(schema map[string]any) {
		schema["required"] = []any{"tier"}
		schema["properties"].(map[string]any)["tier"] = map[string]any{"type": "string"}
	}
	defer func() { w.schemaPatch = nil }()
	return w.publish(t, v)
}

// A failed upgrade is rolled back, manually or automatically; the
// previous version returns with its resources and ownership.
func TestRollback(t *testing.T) {
	for _, auto := range []bool{false, true} {
		t.Run(fmt.Sprintf("auto=%v", auto), func(t *testing.T) {
			w := newWorld(t)
			src1 := w.publish(t, v1)
			id := w.create(t, src1)
			w.waitStatus(t, id, "Unresolved")
			if auto {
				patch(t, w, id, `{"autoRollback":true}`, http.StatusAccepted)
			}
			w.activate(t, id)
			w.waitStatus(t, id, "Healthy")
			before := w.owned(t, id)

			// The new RightBundle cannot be created: a partial upgrade.
			require.NoError(t, w.sim.InjectFault(simulator.Fault{Kind: "RightBundle", Op: "apply", Effect: simulator.EffectFail, Message: "rights not registered"}))
			patch(t, w, id, `{"source":"`+w.publish(t, v2)+`"`+acceptV2+`}`, http.StatusAccepted)
			if !auto {
				v := w.waitStatus(t, id, "Unhealthy")
				require.Equal(t, "2.0.0", v.Version, "a partial upgrade")
				require.True(t, anyError(v, "rights not registered"), "%+v", v.State.ErrorDetails)
				resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{"targetVersion": "0.9.0"})
				require.Equal(t, http.StatusBadRequest, resp.Status, "unknown target version: %s", resp.Body)
				resp = w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{"targetVersion": "1.0.0"})
				require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
			}
			poll(t, "the rollback", 60*time.Second, func() string {
				return string(w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil).Body)
			}, func(h string) bool {
				return strings.Contains(h, `"type":"rollback"`) && !strings.Contains(h, `"outcome":"Running"`)
			})
			v := w.waitStatus(t, id, "Healthy")
			require.Equal(t, "1.0.0", v.Version)
			require.Equal(t, "active", v.LifecycleState)
			require.Equal(t, before, w.owned(t, id), "the previous version's resources, owned by it again")
			hist := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
			require.Contains(t, string(hist.Body), `"type":"rollback"`)
		})
	}
}

// Rolling back would downgrade an installed SupervisorService: refused,
// with the seed's workaround.
func TestRollbackRefusedForSupervisorServiceDowngrade(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	newer := v2
	newer.SSVersion = "2.0.0"
	require.NoError(t, w.sim.InjectFault(simulator.Fault{Kind: "RightBundle", Op: "apply", Effect: simulator.EffectFail}))
	patch(t, w, id, `{"source":"`+w.publish(t, newer)+`"`+acceptV2+`}`, http.StatusAccepted)
	w.waitStatus(t, id, "Unhealthy")
	resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{})
	require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
	for _, m := range []string{"cannot be downgraded", "delete the service completely", "reinstall the previous version", "restore data from a backup"} {
		require.Contains(t, string(resp.Body), m)
	}
}

// autoUpgrade: a newer registered version is shown and, when allowed,
// installed without being asked.
func TestAutoUpgrade(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	// The same terms as v1: an automatic upgrade cannot accept new ones.
	src2 := w.publish(t, sameTerms("2.0.0"))
	reg := w.box.Do(t, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": src2})
	require.Equal(t, http.StatusOK, reg.Status, "%s", reg.Body)
	v := w.get(t, id)
	require.Equal(t, "2.0.0", v.Available, "the upgrade shows as available")
	require.Equal(t, "1.0.0", v.Version, "without autoUpgrade nothing happens")

	patch(t, w, id, `{"autoUpgrade":true}`, http.StatusAccepted)
	poll(t, "the automatic upgrade", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Version == "2.0.0" && v.Status == "Healthy"
	})
	hist := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	require.Contains(t, string(hist.Body), `"requestedBy":"auto-upgrade"`)

	// Registering a bad bundle is refused at once: the problem is known
	// within the request.
	bad := ver("3.0.0", map[string]string{"appplatform.vmware.com/source-version-upgrade-constraints": ">=banana"})
	resp := w.box.Do(t, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": w.publish(t, bad)})
	require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), ">=banana")
}

// A plan to a version the installed one may not upgrade to directly
// suggests the path through registered versions that may (api.md's
// suggestedPath), planned from the constraints the catalog recorded when
// each version was registered.
func TestUpgradePlanSuggestsPath(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	for _, v := range []arcturusVersion{
		ver("1.5.0", nil),
		ver("1.7.0", map[string]string{"appplatform.vmware.com/source-version-upgrade-constraints": ">=1.6.0"}),
		ver("2.0.0", map[string]string{"appplatform.vmware.com/source-version-upgrade-constraints": ">=1.5.0"}),
	} {
		reg := w.box.Do(t, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": w.publish(t, v)})
		require.Equal(t, http.StatusOK, reg.Status, "%s", reg.Body)
	}
	resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/upgrade-plan", map[string]any{"targetVersion": "2.0.0"})
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var p planView
	resp.JSON(t, &p)
	require.False(t, p.Allowed, "1.0.0 may not upgrade to 2.0.0 directly")
	require.Contains(t, strings.Join(p.BlockingReasons, " | "), ">=1.5.0")
	require.Equal(t, []string{"1.5.0", "2.0.0"}, p.SuggestedPath)
}

// Concurrent conflicting operations are refused with 409.
func TestConflictingOperations(t *testing.T) {
	hook := newHook(t)
	w := newWorld(t, withHook(hook))
	hooked := v1
	hooked.Annotations = hookAnnotations
	id := w.installed(t, w.publish(t, hooked))
	hook.mu.Lock()
	hook.delay = 3 * time.Second // keep the upgrade busy in its hook step
	hook.mu.Unlock()
	src2 := w.publish(t, v2)
	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`}`, http.StatusAccepted)
	other := ver("2.1.0", nil)
	patch(t, w, id, `{"source":"`+w.publish(t, other)+`"}`, http.StatusConflict)
	resp := w.box.Do(t, http.MethodDelete, "/v2/vcf-services/"+id, nil)
	require.Equal(t, http.StatusConflict, resp.Status, "%s", resp.Body)
	patch(t, w, id, `{"lifecycleState":"paused"}`, http.StatusConflict)
	patch(t, w, id, `{"labels":{"team":"platform"}}`, http.StatusAccepted) // metadata is not an operation
	poll(t, "the upgrade", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Version == "2.0.0" && v.Status == "Healthy"
	})
	require.Equal(t, "platform", w.get(t, id).Labels["team"])
}

// A step past its time bound marks the upgrade stuck; rollback recovers.
func TestStuckUpgradeRecoveredByRollback(t *testing.T) {
	hook := newHook(t)
	w := newWorld(t, withHook(hook), func(c *app.Config) {
		c.Lifecycle.StepTimeouts = map[string]time.Duration{"precheck-hook": 500 * time.Millisecond}
	})
	hooked := v1
	hooked.Annotations = hookAnnotations
	id := w.installed(t, w.publish(t, hooked))
	hook.mu.Lock()
	hook.delay = 20 * time.Second
	hook.mu.Unlock()
	patch(t, w, id, `{"source":"`+w.publish(t, v2)+`"`+acceptV2+`}`, http.StatusAccepted)
	v := poll(t, "the upgrade to be stuck", 30*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return anyError(v, "stuck at step precheck-hook")
	})
	require.Equal(t, "1.0.0", v.Version)
	resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{})
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	v = w.waitStatus(t, id, "Healthy")
	require.Equal(t, "1.0.0", v.Version)
	hist := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	require.Contains(t, string(hist.Body), `"outcome":"RolledBack"`)
}
