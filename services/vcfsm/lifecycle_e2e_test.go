package vcfsm_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	lifecycleapp "github.com/vcfsm/vcfsm/services/lifecycle/app"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// api.md "Install and activate a service", then pause, resume, deactivate
// and delete, over real sockets.
func TestInstallActivatePauseResumeDelete(t *testing.T) {
	w := newWorld(t)
	src := w.publish(t, v1)

	// 1-3. Create; the bundle downloads (Busy) and is registered (Unresolved).
	id := w.create(t, src)
	v := w.waitStatus(t, id, "Unresolved")
	require.Equal(t, arcturusName, v.Name, "the name comes from the package")
	require.Equal(t, "1.0.0", v.Version, "the version comes from the package")
	require.Equal(t, "broadcom", v.Vendor)
	require.Equal(t, "inactive", v.LifecycleState)
	require.Equal(t, "svc-arcturus-galaxy-com", v.Namespace)

	// Metadata, package (YAML), effective values and resources previews.
	md := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/metadata", nil)
	require.Equal(t, http.StatusOK, md.Status, "%s", md.Body)
	require.Contains(t, string(md.Body), `"displayName":"Arcturus"`)
	pkg := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/package", nil)
	require.Equal(t, http.StatusOK, pkg.Status)
	require.Equal(t, "application/yaml", pkg.Header.Get("Content-Type"))
	require.Contains(t, string(pkg.Body), "refName: "+arcturusName)
	eff := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/render-effective-values", map[string]any{})
	require.Equal(t, http.StatusOK, eff.Status, "%s", eff.Body)
	require.Equal(t, "application/yaml", eff.Header.Get("Content-Type"))
	require.Contains(t, string(eff.Body), "supervisor-vc1")
	require.Contains(t, string(eff.Body), "eu-central-1")
	res := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/render-resources", map[string]any{})
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	require.Contains(t, string(res.Body), "kind: SupervisorService")
	require.Contains(t, string(res.Body), "kind: GlobalRole")

	// 4-6. Inventory, grants, activation.
	w.activate(t, id)
	v = w.waitStatus(t, id, "Healthy", "Unhealthy")
	require.Equal(t, "Healthy", v.Status, "%+v", v.State)
	require.Equal(t, "active", v.LifecycleState)
	require.Equal(t, "Passed", v.State.PreCheckStatus)
	kinds := map[string]int{}
	for _, r := range v.State.Resources {
		require.Equal(t, "Healthy", r.Status, "%s %s: %s", r.Type, r.Name, r.Message)
		require.NotEmpty(t, r.LastModified)
		kinds[r.Type]++
	}
	require.Equal(t, 2, kinds["SupervisorService"], "one per region")
	require.Equal(t, 1, kinds["GlobalRole"])
	require.Equal(t, 1, kinds["VcfaServiceAccount"])
	require.Equal(t, 1, kinds["UserInterfacePlugin"])
	require.NotEmpty(t, v.Values["effective"], "the effective values are kept")

	// The targets hold what the service owns.
	owned, err := w.sim.List(context.Background(), id)
	require.NoError(t, err)
	require.Len(t, owned, 5)
	for _, o := range owned {
		require.Equal(t, "1.0.0", o.Owner.Version)
		require.Equal(t, []string{"services.vcfa.broadcom.com/cleanup"}, o.Finalizers)
	}

	// List and filter.
	list := w.box.Do(t, http.MethodGet, "/v2/vcf-services?page=1&pageSize=25&filter=name==*arcturus*;lifecycleState==active", nil)
	require.Equal(t, http.StatusOK, list.Status, "%s", list.Body)
	var set struct {
		ResultTotal int       `json:"resultTotal"`
		PageCount   int       `json:"pageCount"`
		Values      []svcView `json:"values"`
	}
	require.NoError(t, json.Unmarshal(list.Body, &set))
	require.Equal(t, 1, set.ResultTotal)
	require.Equal(t, id, set.Values[0].ID)

	// Pause: controllers skip the service; a resource removed behind its
	// back is not restored until it resumes.
	patch(t, w, id, `{"lifecycleState":"paused"}`, http.StatusAccepted)
	require.Equal(t, "paused", w.get(t, id).LifecycleState)
	role := target.Key{System: target.SystemVCFA, Kind: "GlobalRole", Identity: "Arcturus Administrator"}
	require.NoError(t, w.sim.Delete(context.Background(), role))
	_, err = w.sim.Get(context.Background(), role)
	require.ErrorIs(t, err, target.ErrNotFound)

	patch(t, w, id, `{"lifecycleState":"active"}`, http.StatusAccepted)
	_ = poll(t, "the GlobalRole restored", 30*time.Second, func() error {
		_, err := w.sim.Get(context.Background(), role)
		return err
	}, func(err error) bool { return err == nil })
	w.waitStatus(t, id, "Healthy")

	// Deactivate: reconciliation stops and the resources are removed
	// (api.md: an inactive service's CRs are not applied).
	patch(t, w, id, `{"lifecycleState":"inactive"}`, http.StatusAccepted)
	require.Equal(t, "inactive", w.get(t, id).LifecycleState)
	patch(t, w, id, `{"lifecycleState":"paused"}`, http.StatusBadRequest)
	w.idle(t, id)
	owned, _ = w.sim.List(context.Background(), id)
	require.Empty(t, owned, "deactivation removes what the service created")

	// History names every operation.
	hist := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	require.Equal(t, http.StatusOK, hist.Status)
	for _, op := range []string{"register", "activate", "pause", "resume", "deactivate"} {
		require.Contains(t, string(hist.Body), `"type":"`+op+`"`)
	}
	require.Contains(t, string(hist.Body), `"lastKnownGoodVersion":"1.0.0"`)

	// Delete: Deleting/Busy, targets cleaned up, then 404.
	del := w.box.Do(t, http.MethodDelete, "/v2/vcf-services/"+id, nil)
	require.Equal(t, http.StatusAccepted, del.Status, "%s", del.Body)
	require.Contains(t, string(del.Body), `"phase":"Deleting"`)
	poll(t, "deletion", 30*time.Second, func() int {
		return w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).Status
	}, func(s int) bool { return s == http.StatusNotFound })
	owned, _ = w.sim.List(context.Background(), id)
	require.Empty(t, owned, "finalizers cleaned up every target")
	_, err = w.sim.Get(context.Background(), role)
	require.ErrorIs(t, err, target.ErrNotFound)
}

func patch(t testing.TB, w *world, id, body string, want int) onebox.Response {
	t.Helper()
	resp := w.box.Do(t, http.MethodPatch, "/v2/vcf-services/"+id, []byte(body))
	require.Equal(t, want, resp.Status, "PATCH %s: %s", body, resp.Body)
	return resp
}

// A force delete finishes even when a target is unreachable and lists what
// it left behind.
func TestForceDeleteWithUnreachableTarget(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	w.sim.SetSupervisor(simulator.SeedSupervisor{Name: "supervisor-eu1", Unreachable: true})

	require.Equal(t, http.StatusAccepted, w.box.Do(t, http.MethodDelete, "/v2/vcf-services/"+id, nil).Status)
	v := poll(t, "the cleanup failure to show", 30*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.State != nil && v.State.Operation != nil && strings.Contains(v.State.Operation.Message, "retrying")
	})
	require.Equal(t, "Deleting", v.Phase)
	require.Equal(t, "Busy", v.Status)

	require.Equal(t, http.StatusAccepted, w.box.Do(t, http.MethodDelete, "/v2/vcf-services/"+id+"?forceDelete=true", nil).Status)
	poll(t, "the forced deletion", 30*time.Second, func() int {
		return w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).Status
	}, func(s int) bool { return s == http.StatusNotFound })

	hist := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	require.Equal(t, http.StatusOK, hist.Status, "history outlives the service")
	require.Contains(t, string(hist.Body), "orphaned SupervisorService arcturus-install", "the orphan is listed for audit")
	require.Contains(t, string(hist.Body), "supervisor-eu1")
}

// Every error row of api.md.
func TestAPIErrors(t *testing.T) {
	w := newWorld(t)
	id := w.create(t, w.publish(t, v1))
	w.waitStatus(t, id, "Unresolved")
	base := "/v2/vcf-services/" + id

	cases := []struct {
		name, method, path, body string
		status                   int
		mentions                 string
	}{
		{"unknown id", http.MethodGet, "/v2/vcf-services/urn:vcloud:entity:broadcom:vcfService:00000000-0000-0000-0000-000000000000", "", 404, "not found"},
		{"malformed id", http.MethodGet, "/v2/vcf-services/nope", "", 404, "ids look like"},
		{"activation without acceptance", http.MethodPatch, base, `{"lifecycleState":"active"}`, 400, "accepted.eula must be true"},
		{"wrong grants", http.MethodPatch, base, `{"lifecycleState":"active","accepted":{"eula":true,"signatures":true,"accessGrants":{"vCenter":{"Role":["x"]}}}}`, 400, "render-access-grants"},
		{"decommissioned via PATCH", http.MethodPatch, base, `{"lifecycleState":"decommissioned"}`, 400, "DELETE"},
		{"inactive to paused", http.MethodPatch, base, `{"lifecycleState":"paused"}`, 400, "inactive -> paused"},
		{"unknown state", http.MethodPatch, base, `{"lifecycleState":"running"}`, 400, "running"},
		{"bad base64", http.MethodPatch, base, `{"values":{"userOverwrite":"***"}}`, 400, "values.userOverwrite"},
		{"bad reconfigure event", http.MethodPatch, base, `{"reconfigure":{"events":["new-region"]}}`, 400, "new-supervisor"},
		{"stale revision", http.MethodPatch, base, `{"labels":{"a":"b"},"revision":"1"}`, 409, "revision"},
		{"unknown field", http.MethodPatch, base, `{"colour":"red"}`, 400, "colour"},
		{"PUT without lifecycleState", http.MethodPut, base, `{"values":{}}`, 400, "lifecycleState is required"},
		{"PUT id mismatch", http.MethodPut, base, `{"id":"urn:other","values":{},"lifecycleState":"inactive"}`, 400, "does not match"},
		{"bad source", http.MethodPost, "/v2/vcf-services", `{"source":"ftp://x/y.tar"}`, 400, "source"},
		{"http source refused", http.MethodPost, "/v2/vcf-services", `{"source":"http://depot.example.com/a.tar"}`, 400, "allow-insecure-sources"},
		{"pageSize too big", http.MethodGet, "/v2/vcf-services?page=1&pageSize=129", "", 400, "pageSize"},
		{"bad filter", http.MethodGet, "/v2/vcf-services?filter=status%3D%3D", "", 400, "filter"},
		{"rollback without history", http.MethodPost, base + "/rollback", `{"targetVersion":"0.9.0"}`, 400, "previous version"},
		{"bad render overlay", http.MethodPost, base + "/render-effective-values", `{"userOverwrite":"%%%"}`, 400, "userOverwrite"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body any
			if c.body != "" {
				body = []byte(c.body)
			}
			resp := w.box.Do(t, c.method, c.path, body)
			require.Equal(t, c.status, resp.Status, "%s", resp.Body)
			require.Contains(t, string(resp.Body), c.mentions)
		})
	}

	// 401 without a token.
	require.Equal(t, http.StatusUnauthorized, w.box.DoWithToken(t, "", http.MethodGet, base, nil).Status)
}

// A blocked activation step leaves a clear state: here the UI plugin needs
// a newer VCF Automation than the simulated one.
func TestActivationBlockedByPrecheck(t *testing.T) {
	w := newWorld(t)
	needs92 := v1
	needs92.PluginVCFA = ">=9.2"
	id := w.create(t, w.publish(t, needs92))
	w.waitStatus(t, id, "Unresolved")
	w.activate(t, id)
	v := w.waitStatus(t, id, "Unhealthy")
	require.Equal(t, "inactive", v.LifecycleState, "the activation did not happen")
	require.Equal(t, "Failed", v.State.PreCheckStatus)
	found := false
	for _, d := range v.State.ErrorDetails {
		if d.Type == "InstallTask" && d.Severity == "ERROR" && strings.Contains(d.Message, "Plugin requires VCF Automation 9.2+, current version: 9.1") {
			found = true
		}
	}
	require.True(t, found, "errorDetails name the cause: %+v", v.State.ErrorDetails)
	owned, err := w.sim.List(context.Background(), id)
	require.NoError(t, err)
	require.Empty(t, owned, "nothing was applied")

	// The platform catches up; activation now succeeds.
	w.sim.SetVCFAVersion("9.2.1")
	w.activate(t, id)
	w.waitStatus(t, id, "Healthy")
}

// Hostile tarballs fail the service with a DownloadTask error.
func TestHostileTarballRejected(t *testing.T) {
	limits := bundletest.HostileLimits{MaxFiles: 64, MaxFileBytes: 64 << 10, MaxBundleBytes: 256 << 10}
	w := newWorld(t, func(c *app.Config) {
		c.Lifecycle.BundleLimits = lifecycleapp.BundleLimits{MaxFiles: limits.MaxFiles, MaxFileBytes: limits.MaxFileBytes, MaxBundleBytes: limits.MaxBundleBytes}
	})
	escape := t.TempDir()
	for _, c := range bundletest.HostileCases(escape, limits) {
		if c.NoTarball {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			tar := bundletest.HostileTarball(t, w.reg, bundletest.RepoName(c.Name)+":1", c)
			w.tars.Add(bundletest.RepoName(c.Name)+".tar", tar)
			id := w.create(t, w.tars.URL(bundletest.RepoName(c.Name)+".tar"))
			v := w.waitStatus(t, id, "Unhealthy")
			require.NotEmpty(t, v.State.ErrorDetails)
			require.Equal(t, "DownloadTask", v.State.ErrorDetails[0].Type, "%+v", v.State.ErrorDetails)
			for _, f := range c.EscapeFiles {
				require.NoFileExists(t, f, "nothing is written outside the bundle directory")
			}
		})
	}
}

// An oci:// source installs like a tarball.
func TestOCISource(t *testing.T) {
	w := newWorld(t)
	w.publish(t, v1)
	id := w.installed(t, w.reg.OCI("arcturus-bundle:1.0.0"))
	require.Equal(t, "1.0.0", w.get(t, id).Version)
}

// Watch streams status changes as newline-delimited JSON.
func TestWatchStreams(t *testing.T) {
	w := newWorld(t)
	id := w.create(t, w.publish(t, v1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.box.URL+"/v2/vcf-services/"+id+"/watch", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+onebox.Token)
	resp, err := w.box.Client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	var seen []string
	activated := false
	for sc.Scan() {
		var ev struct {
			Result struct{ Status, Phase, LifecycleState string } `json:"result"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), "%s", sc.Bytes())
		seen = append(seen, ev.Result.Status)
		if ev.Result.Status == "Unresolved" && !activated {
			activated = true
			go w.activate(t, id)
		}
		if ev.Result.Status == "Healthy" {
			break
		}
	}
	require.Contains(t, seen, "Busy")
	require.Contains(t, seen, "Unresolved")
	require.Equal(t, "Healthy", seen[len(seen)-1])
}

// The Supervisor upgrade check, on demand and on inventory updates.
func TestSupervisorUpgradeChecks(t *testing.T) {
	w := newWorld(t)
	constrained := v1
	constrained.Annotations = map[string]string{"appplatform.vmware.com/supervisor-version-constraints": "<9.2.0.0"}
	constrained.K8sConstraint = ">=1.30.0"
	id := w.installed(t, w.publish(t, constrained))

	ok := w.box.Do(t, http.MethodPost, "/v2/supervisors/supervisor-vc1/upgrade-check", map[string]any{"targetVersion": "9.1.5.0"})
	require.Equal(t, http.StatusOK, ok.Status, "%s", ok.Body)
	require.Contains(t, string(ok.Body), `"blocked":false`)
	bad := w.box.Do(t, http.MethodPost, "/v2/supervisors/supervisor-vc1/upgrade-check", map[string]any{"targetVersion": "9.2.0.0"})
	require.Equal(t, http.StatusOK, bad.Status, "%s", bad.Body)
	require.Contains(t, string(bad.Body), `"blocked":true`)
	require.Contains(t, string(bad.Body), "9.2.0.0")
	require.Equal(t, http.StatusNotFound, w.box.Do(t, http.MethodPost, "/v2/supervisors/nope/upgrade-check", map[string]any{"targetVersion": "9.2.0.0"}).Status)

	// Raising the Supervisor's version in the inventory records the verdict.
	raised := strings.Replace(inventoryJSON(t, w), `"9.0.0.0"`, `"9.2.0.0"`, 1)
	put := w.box.Do(t, http.MethodPut, "/v2/inventory", []byte(raised))
	require.Equal(t, http.StatusOK, put.Status, "%s", put.Body)
	require.Contains(t, string(put.Body), `"blocked":true`)
	v := w.get(t, id)
	found := false
	for _, d := range v.State.ErrorDetails {
		if d.Severity == "ERROR" && strings.Contains(d.Message, "Supervisor supervisor-vc1 upgrade to 9.2.0.0") {
			found = true
		}
	}
	require.True(t, found, "%+v", v.State.ErrorDetails)
}

func inventoryJSON(t testing.TB, w *world) string {
	resp := w.box.Do(t, http.MethodGet, "/v2/inventory", nil)
	require.Equal(t, http.StatusOK, resp.Status)
	return string(resp.Body)
}

// Configuration changes of an active service are rendered and applied.
func TestUserOverwriteReconfigures(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	before := w.get(t, id)
	overwrite := base64.StdEncoding.EncodeToString([]byte("hookCA: PEM-DATA\n"))
	patch(t, w, id, `{"values":{"userOverwrite":"`+overwrite+`"}}`, http.StatusAccepted)
	v := w.waitStatus(t, id, "Healthy")
	require.Equal(t, overwrite, v.Values["userOverwrite"])
	require.NotEqual(t, before.Values["effective"], v.Values["effective"])
	secrets, err := w.sim.Secrets(context.Background(), "supervisor-vc1", "svc-arcturus-galaxy-com")
	require.NoError(t, err)
	require.Equal(t, []byte("PEM-DATA"), secrets["hook-ca"]["ca.crt"], "the rendered Secret lands in the service's namespace")
}
