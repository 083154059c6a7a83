package vcfsm_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// "orion" is a service made only of VCF Automation kinds plus a hook CA
// Secret, each linked to us-west-1 with the link-region label: no resource
// names a Supervisor (issue 16 §1, §2).
const orionName = "orion.galaxy.com"

const orionHookHost = "orion-hook.svc-orion-galaxy-com.svc.cluster.local"

const orionTemplate = `---
apiVersion: services.vcfa.broadcom.com/v2
kind: GlobalRole
metadata:
  labels:
    services.vcfa.broadcom.com/name: orion-admin
    services.vcfa.broadcom.com/link-region: us-west-1
spec:
  name: Orion Administrator %[1]s
  rights: [RIGHT_ORGANIZATION_VIEW]
  scope: {allTenants: true}
---
apiVersion: v1
kind: Secret
metadata:
  name: hook-ca
  labels:
    services.vcfa.broadcom.com/link-region: us-west-1
stringData:
  ca.crt: |
%[2]s
`

// publishOrion publishes an orion version whose hook CA is caPEM.
func (w *world) publishOrion(t *testing.T, version string, annotations map[string]string, caPEM []byte) string {
	t.Helper()
	indented := "    " + strings.ReplaceAll(strings.TrimSpace(string(caPEM)), "\n", "\n    ")
	spec := bundletest.BundleSpec{
		Name: orionName, Version: version, DisplayName: "Orion", ProviderName: "Broadcom", Annotations: annotations,
		ValuesSchema: map[string]any{"title": "orion values schema", "properties": map[string]any{}},
		ConfigFiles: map[string]string{
			"values.yml":      "#@data/values\n---\n{}\n",
			"lib.star":        "def unused():\n    return 0\nend\n",
			"server.lib.yml":  "#@ def unused():\n#@ end\n",
			"vcf-service.yml": fmt.Sprintf(orionTemplate, version, indented),
		},
	}
	dir := bundletest.NewBundleDir(t, spec)
	bundletest.PushBundle(t, w.reg, dir, "orion-bundle:"+version)
	tar := bundletest.CopyToTar(t, w.reg, w.reg.Ref("orion-bundle:"+version))
	name := "orion-" + version + ".tar"
	w.tars.Add(name, tar)
	return w.tars.URL(name)
}

// newHTTPSHook serves the hook over HTTPS with a certificate for the
// hook's in-cluster name, signed by ca.
func newHTTPSHook(t *testing.T, ca *bundletest.CA) *hookServer {
	h := newHook(t)
	h.Close()
	srv := httptest.NewUnstartedServer(h.Config.Handler)
	srv.TLS = ca.ServerTLS()
	srv.TLS.MinVersion = tls.VersionTLS12
	srv.StartTLS()
	t.Cleanup(srv.Close)
	h.Server = srv
	return h
}

// A package's Supervisor-version constraint is checked against the
// Supervisors of the region its resources link to, even when no resource
// names a Supervisor: us-west-1 runs 9.0, so ">=9.9.0.0" refuses it.
func TestSupervisorConstraintOfRegionLinkedService(t *testing.T) {
	w := newWorld(t)
	ca := bundletest.NewCA(t)
	src := w.publishOrion(t, "1.0.0", map[string]string{"appplatform.vmware.com/supervisor-version-constraints": ">=9.9.0.0"}, ca.PEM)
	id := w.create(t, src)
	w.waitStatus(t, id, "Unresolved")
	w.activate(t, id)
	v := poll(t, "the activation to be refused", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.State != nil && anyError(v, ">=9.9.0.0")
	})
	require.NotEqual(t, "Healthy", v.Status)
	require.Contains(t, fmt.Sprint(v.State.ErrorDetails), "supervisor-vc1", "the Supervisor of the linked region is named")
}

// A region-linked hook CA Secret lands in the service's namespace on the
// region's Supervisors, so an https hook is reached with it; a blocked
// upgrade shows every result the hook returned (§2, §3); every resource
// in state has a name, a namespace and a status (§5).
func TestRegionLinkedSecretServesHTTPSHook(t *testing.T) {
	ca := bundletest.NewCA(t, orionHookHost)
	hook := newHTTPSHook(t, ca)
	w := newWorld(t, func(c *app.Config) {
		c.Precheck.Resolve = []string{orionHookHost + "=" + hook.Listener.Addr().String()}
	})
	annotations := map[string]string{
		"appplatform.vmware.com/compatibility-check_service":   "orion-hook",
		"appplatform.vmware.com/compatibility-check_url":       "precheck/v1",
		"appplatform.vmware.com/compatibility-check_method":    "POST",
		"appplatform.vmware.com/compatibility-check_port":      "443",
		"appplatform.vmware.com/compatibility-check_protocol":  "https",
		"appplatform.vmware.com/compatibility-check_ca_secret": "hook-ca",
		"appplatform.vmware.com/compatibility-check_data":      `{"check":"ready"}`,
	}
	id := w.installed(t, w.publishOrion(t, "1.0.0", annotations, ca.PEM))

	v := w.get(t, id)
	var secretsOn []string
	for _, r := range v.State.Resources {
		require.NotEmpty(t, r.Name, "%+v", r)
		require.Equal(t, "svc-orion-galaxy-com", r.Namespace, "%s %s has the service's namespace", r.Type, r.Name)
		require.NotEmpty(t, r.Status, "%+v", r)
		if r.Type == "Secret" {
			secretsOn = append(secretsOn, r.Supervisor)
		}
	}
	require.Equal(t, []string{"supervisor-vc1"}, secretsOn, "the Secret goes to us-west-1's Supervisor only")

	hook.answer(200, `{"results":[{"severity":"error","message":"backing PVC is not bound"},`+
		`{"severity":"Warning","message":"disk 91% full"},{"severity":"info","message":"3 replicas ready"}]}`)
	src2 := w.publishOrion(t, "1.1.0", annotations, ca.PEM)
	// Its GlobalRole's name carries the version: the grants change.
	accept := accepting(t, w, id, src2)
	require.NotEmpty(t, accept)
	patch(t, w, id, `{"source":"`+src2+`"`+accept+`}`, http.StatusAccepted)
	v = poll(t, "the upgrade to be refused", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.State != nil && anyError(v, "backing PVC is not bound")
	})
	got := map[string]string{}
	for _, d := range v.State.ErrorDetails {
		// Each hook result names the Supervisor it came from (issue 24 §5).
		got[strings.TrimPrefix(d.Message, "pre-check hook on supervisor-vc1: ")] = d.Severity
	}
	require.Equal(t, "ERROR", got["backing PVC is not bound"], "%+v", v.State.ErrorDetails)
	require.Equal(t, "WARN", got["disk 91% full"], "%+v", v.State.ErrorDetails)
	require.Equal(t, "INFO", got["3 replicas ready"], "%+v", v.State.ErrorDetails)
	ops := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	require.Equal(t, http.StatusOK, ops.Status, "%s", ops.Body)
	require.Contains(t, string(ops.Body), "disk 91% full", "the operation's record carries the warning too")

	hook.answer(200, `{"results":[{"severity":"INFO","message":"fine"}]}`)
	patch(t, w, id, `{"source":"`+src2+`"`+accept+`}`, http.StatusAccepted)
	v = poll(t, "the upgrade through the https hook", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Version == "1.1.0" && v.Status == "Healthy"
	})
	require.Equal(t, "active", v.LifecycleState)
	hook.mu.Lock()
	defer hook.mu.Unlock()
	require.Contains(t, strings.Join(hook.got, "\n"), `{"check":"ready"}`, "the hook was reached over https")
}

// Paging and query-parameter errors name the REST parameter (§4).
func TestRESTParameterErrors(t *testing.T) {
	w := newWorld(t)
	for q, want := range map[string]string{
		"page=0":              "query parameter page: 0 is not a page",
		"pageSize=abc":        `query parameter pageSize: \"abc\" is not a number`,
		"sortAsc=x&sortAsc=y": "query parameter sortAsc is given more than once",
		"state=maybe":         `query parameter state: \"maybe\" is not a boolean`,
	} {
		resp := w.box.Do(t, http.MethodGet, "/v2/vcf-services?"+q, nil)
		require.Equal(t, http.StatusBadRequest, resp.Status, "%s: %s", q, resp.Body)
		require.Contains(t, string(resp.Body), want, q)
		require.NotContains(t, string(resp.Body), "page_size", q)
	}
	resp := w.box.Do(t, http.MethodDelete, "/v2/vcf-services/urn:vcloud:entity:broadcom:vcfService:x?forceDelete=yes", nil)
	require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
	require.Contains(t, string(resp.Body), "query parameter forceDelete")

	// One clean sentence: no transport noise after it (§7).
	resp = w.box.Do(t, http.MethodPost, "/v2/vcf-services", map[string]any{"source": ""})
	require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
	var body struct{ Message string }
	resp.JSON(t, &body)
	require.Contains(t, body.Message, "source is required")
	require.False(t, strings.HasSuffix(body.Message, ": invalid argument"), body.Message)
	resp = w.box.Do(t, http.MethodPost, "/v2/vcf-services", map[string]any{"source": "https://127.0.0.1:1/x.tar"})
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var created svcView
	resp.JSON(t, &created)
	resp = w.box.Do(t, http.MethodPatch, "/v2/vcf-services/"+created.ID, []byte(`{"lifecycleState":"active"}`))
	require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
	resp.JSON(t, &body)
	require.NotContains(t, body.Message, "failed precondition", body.Message)
	v := poll(t, "the registration to fail", 30*time.Second, func() svcView { return w.get(t, created.ID) }, func(v svcView) bool {
		return v.State != nil && v.State.Operation != nil && v.State.Operation.Outcome == "Failed"
	})
	for _, d := range v.State.ErrorDetails {
		require.Equal(t, 1, strings.Count(d.Message, "https://127.0.0.1:1/x.tar"), "the source is named once: %s", d.Message)
	}
}

// A depot that announces a tarball and then sends almost nothing is given
// up within the stall bounds: the registration fails with a DownloadTask
// ERROR saying the transfer stalled after how many bytes (§6), and
// state.operation says the operation failed at the download step (§7).
func TestStalledRegistrationFails(t *testing.T) {
	w := newWorld(t, func(c *app.Config) {
		c.Lifecycle.DownloadStall.Timeout = 300 * time.Millisecond
		c.Lifecycle.DownloadStall.MinRate = 10 << 10
		c.Lifecycle.DownloadStall.Window = 400 * time.Millisecond
	})
	w.tars.Handle("drip.tar", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Length", "1048576")
		rw.WriteHeader(http.StatusOK)
		_, _ = rw.Write(make([]byte, 64))
		rw.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	}))
	id := w.create(t, w.tars.URL("drip.tar"))
	v := poll(t, "the registration to fail", 30*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.State != nil && v.State.Operation != nil && v.State.Operation.Outcome == "Failed"
	})
	found := false
	for _, d := range v.State.ErrorDetails {
		if d.Type == "DownloadTask" && d.Severity == "ERROR" && strings.Contains(d.Message, "the transfer stalled: no data for 300ms after 64 bytes") {
			found = true
		}
	}
	require.True(t, found, "%+v", v.State.ErrorDetails)
	require.Equal(t, "download", v.State.Operation.Step)
	require.GreaterOrEqual(t, v.State.Operation.Percent, 0, "not the download's unknown -1")
	require.Contains(t, v.State.Operation.Message, "failed at step download: ")
	require.Contains(t, v.State.Operation.Message, "the transfer stalled")
	require.NotEqual(t, "Busy", v.Status)
}

// readWatch reads a watch stream to its end and returns its statuses.
func (w *world) readWatch(t *testing.T, id, query string) []event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.box.URL+"/v2/vcf-services/"+id+"/watch?"+query, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer onebox-test-token-0123456789abcdef")
	resp, err := w.box.Client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out []event
	dec := json.NewDecoder(resp.Body)
	for {
		var m struct {
			Result event                     `json:"result"`
			Error  *struct{ Message string } `json:"error"`
		}
		if err := dec.Decode(&m); err != nil {
			require.ErrorIs(t, err, io.EOF, "the stream ended by itself, not by the deadline")
			return out
		}
		require.Nil(t, m.Error)
		out = append(out, m.Result)
	}
}

// watch?until=<status> ends the stream when the service gets there, or
// when its operation fails (§7).
func TestWatchUntil(t *testing.T) {
	w := newWorld(t)
	id := w.create(t, w.publish(t, v1))
	evs := w.readWatch(t, id, "until=Unresolved")
	require.Equal(t, "Unresolved", evs[len(evs)-1].Status)
	w.activate(t, id)
	evs = w.readWatch(t, id, "until=Healthy")
	require.Equal(t, "Healthy", evs[len(evs)-1].Status)

	failing := w.create(t, "https://127.0.0.1:1/x.tar")
	evs = w.readWatch(t, failing, "until=Ready")
	require.NotEqual(t, "Ready", evs[len(evs)-1].Status, "the failed registration ended the stream")

	resp := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/watch?until=Sleeping", nil)
	require.Contains(t, string(resp.Body), `until: \"Sleeping\" is not a status`)
}

// A Supervisor upgrade is checked against a service whose resources only
// link to the Supervisor's region; the other region's Supervisor is not
// one of its Supervisors (§1).
func TestSupervisorUpgradeOfRegionLinkedService(t *testing.T) {
	w := newWorld(t)
	ca := bundletest.NewCA(t)
	w.installed(t, w.publishOrion(t, "1.0.0", map[string]string{"appplatform.vmware.com/supervisor-version-constraints": "<9.5.0.0"}, ca.PEM))
	bad := w.box.Do(t, http.MethodPost, "/v2/supervisors/supervisor-vc1/upgrade-check", map[string]any{"targetVersion": "9.6.0.0"})
	require.Equal(t, http.StatusOK, bad.Status, "%s", bad.Body)
	require.Contains(t, string(bad.Body), `"blocked":true`)
	require.Contains(t, string(bad.Body), orionName)
	other := w.box.Do(t, http.MethodPost, "/v2/supervisors/supervisor-eu1/upgrade-check", map[string]any{"targetVersion": "9.6.0.0"})
	require.Equal(t, http.StatusOK, other.Status, "%s", other.Body)
	require.Contains(t, string(other.Body), `"blocked":false`)
	require.NotContains(t, string(other.Body), orionName, "eu-central-1 is not linked")
}
