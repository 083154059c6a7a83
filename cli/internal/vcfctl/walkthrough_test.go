package vcfctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"

	"github.com/vcfsm/vcfsm/cli/internal/vcfctl"
)

// The README walkthrough with vcfctl alone, from login to delete --wait:
// every command's output and exit code.
func TestWalkthrough(t *testing.T) {
	w := newWorld(t)
	src1, src2, src3 := w.publish(t, v1), w.publish(t, v2), w.publish(t, v3)

	// Login: the context is saved 0600 and the token never printed.
	tokenFile := filepath.Join(w.tmp, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(onebox.Token+"\n"), 0o600))
	bad := w.runIO(t, strings.NewReader("wrong-token\n"), "login", "--server", w.box.URL, "--token-stdin")
	require.Equal(t, vcfctl.ExitError, bad.code, "a wrong token fails the login")
	require.Contains(t, bad.errOut, w.box.URL+" refused the token from standard input (--token-stdin): missing or invalid bearer token")
	require.NotContains(t, bad.errOut, "Authorization", "no REST instructions")
	out := w.ok(t, "login", "--server", w.box.URL, "--token-file", tokenFile, "--context", "box")
	require.Contains(t, out, `context "box"`)
	require.NotContains(t, out, onebox.Token)
	cfg := filepath.Join(w.env["XDG_CONFIG_HOME"], "vcfctl", "config.yaml")
	info, err := os.Stat(cfg)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	out = w.ok(t, "context", "list")
	require.Regexp(t, `\*\s+box\s+`+w.box.URL, out)
	require.NotContains(t, out, onebox.Token)
	require.Equal(t, vcfctl.ExitUsage, w.run(t, "login", "--server", w.box.URL).code, "login without a token is a usage error")

	// The platform inventory.
	invFile := filepath.Join(w.tmp, "inv.yaml")
	require.NoError(t, os.WriteFile(invFile, []byte(inventoryYAML), 0o600))
	require.Contains(t, w.ok(t, "inventory", "set", invFile), "Inventory replaced: 2 region(s)")
	require.Contains(t, w.ok(t, "inventory", "get"), "supervisor-eu1")
	require.Contains(t, w.ok(t, "inventory", "get", "-o", "json"), `"supervisor-vc1"`)

	// 1. Create and wait for Unresolved.
	out = w.ok(t, "service", "create", src1, "--wait")
	require.Contains(t, out, "create: download")
	require.NotContains(t, out, "create: register:", "one verb")
	require.Regexp(t, `create urn:vcloud:entity:broadcom:vcfService:[0-9a-f-]{36}: Unresolved \(inactive, version 1\.0\.0\)`, out)
	out = w.ok(t, "service", "list")
	require.Regexp(t, `arcturus\.galaxy\.com\s+1\.0\.0\s+Unresolved\s+inactive`, out)
	out = w.ok(t, "service", "get", "arcturus.galaxy.com")
	require.Regexp(t, `Version\s+1\.0\.0`, out)
	id := field(t, out, "ID")
	uuid := strings.TrimPrefix(id, "urn:vcloud:entity:broadcom:vcfService:")
	require.Contains(t, w.ok(t, "service", "get", uuid, "-o", "yaml"), "name: arcturus.galaxy.com", "a uuid names the service")

	// 2. Preview values, resources, grants, provenance.
	require.Contains(t, w.ok(t, "service", "render", "arcturus.galaxy.com", "values"), "hostSupervisor")
	require.Contains(t, w.ok(t, "service", "render", "arcturus.galaxy.com", "resources"), "kind: GlobalRole")
	grants := w.ok(t, "service", "render", "arcturus.galaxy.com", "grants")
	require.Contains(t, w.ok(t, "service", "render", "arcturus.galaxy.com", "provenance"), "PATH")
	require.Equal(t, vcfctl.ExitUsage, w.run(t, "service", "render", "arcturus.galaxy.com", "everything").code)
	valuesFile := filepath.Join(w.tmp, "values.yaml")
	require.NoError(t, os.WriteFile(valuesFile, []byte("hookCA: my-ca\n"), 0o600))
	require.Contains(t, w.ok(t, "service", "render", "arcturus.galaxy.com", "values", "--values-file", valuesFile), "hookCA: my-ca")
	require.Regexp(t, `hookCA\s+user\s+"?my-ca`, w.ok(t, "service", "render", "arcturus.galaxy.com", "provenance", "--values-file", valuesFile))
	require.Contains(t, w.ok(t, "service", "render", "arcturus.galaxy.com", "resources", "--values-file", valuesFile), "name: hook-ca",
		"the user's values reach the rendered resources")

	// 3. Activation needs the acceptances; then Healthy.
	r := w.run(t, "service", "activate", "arcturus.galaxy.com", "--accept-rendered-grants")
	require.Equal(t, vcfctl.ExitUsage, r.code, "%s", r.errOut)
	require.Contains(t, r.errOut, "--accept-eula")
	grantsFile := filepath.Join(w.tmp, "grants.json")
	require.NoError(t, os.WriteFile(grantsFile, []byte(grants), 0o600))
	out = w.ok(t, "service", "activate", "arcturus.galaxy.com", "--accept-eula", "--accept-signatures", "--accept-grants", grantsFile, "--wait")
	require.Contains(t, out, "activate: apply")
	require.NotContains(t, out, "activate: activate:", "one verb")
	require.Contains(t, out, ": Healthy (active, version 1.0.0)")
	// A watch with --until ends by itself when the status is reached.
	out = w.ok(t, "service", "watch", "arcturus.galaxy.com", "--until", "Healthy")
	require.Regexp(t, `Healthy\s+active\s+version 1\.0\.0`, out)
	require.Equal(t, 1, strings.Count(out, "\n"), "the current state is Healthy: one line, then the end")

	// 4. A watch follows everything below as NDJSON until the delete.
	watched, watchedTable := w.background(t, "service", "watch", id, "-o", "json"), w.background(t, "service", "watch", "arcturus.galaxy.com")

	// 5. Plan and upgrade to 2.0.0.
	out = w.ok(t, "service", "plan", "arcturus.galaxy.com", "--source", src2)
	require.Contains(t, out, "Upgrade 1.0.0 -> 2.0.0: allowed")
	require.Contains(t, out, "storage is ready", "the hook's result is shown")
	require.Regexp(t, `reconfigured\s+GlobalRole\s+arcturus-admin`, out)
	require.Regexp(t, `created\s+RightBundle\s+arcturus-rights`, out)
	require.Regexp(t, `decommissioned\s+VcfaServiceAccount\s+arcturus-sa`, out)
	require.Regexp(t, `unchanged\s+SupervisorService\s+arcturus-install\s+supervisor-vc1`, out)
	require.Contains(t, out, "\n  +  - RIGHT_ORG_TRAVERSE\n", "the unified diff shows the new right")
	require.Contains(t, out, "--- current")
	// 2.0.0 trades the service account for a right bundle: the plan says
	// so, and the upgrade accepts the grants it shows.
	require.Contains(t, out, "Accept: accessGrants")
	require.Contains(t, out, "  + grant VCF Automation RightBundle arcturusRightsBundle\n")
	require.Contains(t, out, "  - grant VCF Automation VcfaServiceAccount arcturus-service-account\n")
	r = w.run(t, "service", "upgrade", "arcturus.galaxy.com", "--source", src2, "--wait")
	require.Equal(t, vcfctl.ExitUsage, r.code, "%s %s", r.out, r.errOut)
	require.Contains(t, r.errOut, "version 2.0.0 changes its accessGrants: the upgrade accepts with --accept-plan-grants")
	out = w.ok(t, "service", "upgrade", "arcturus.galaxy.com", "--source", src2, "--accept-plan-grants", "--wait")
	require.Contains(t, out, `Accepting the access grants of 2.0.0: {"Supervisor":{"ManagementService":["vcf-depot"]},"VCF Automation":{"GlobalRole":["Arcturus Administrator"],"RightBundle":["arcturusRightsBundle"]}}`)
	require.Contains(t, out, ": Healthy (active, version 2.0.0)")
	r = w.run(t, "service", "plan", "arcturus.galaxy.com", "--source", src2)
	require.Equal(t, vcfctl.ExitError, r.code, "a refused request is an error, not a usage error")
	require.Contains(t, r.errOut, "version 2.0.0 is already installed")

	// 6. An upgrade the hook refuses: plan and upgrade --wait exit 3 with
	// the hook's message; upgrade runs the plan first and starts nothing.
	w.hook.answer(http.StatusOK, `{"results":[{"severity":"ERROR","message":"backing PVC is not bound"}]}`)
	r = w.run(t, "service", "plan", "arcturus.galaxy.com", "--source", src3)
	require.Equal(t, vcfctl.ExitBlocked, r.code, "%s %s", r.out, r.errOut)
	require.Contains(t, r.out, "Upgrade 2.0.0 -> 3.0.0: BLOCKED")
	require.Regexp(t, `ERROR\s+HOOK\s+supervisor-eu1, supervisor-vc1\s+backing PVC is not bound`, r.out)
	operations := strings.Count(w.ok(t, "service", "history", id), "\n")
	r = w.run(t, "service", "upgrade", "arcturus.galaxy.com", "--source", src3, "--wait")
	require.Equal(t, vcfctl.ExitBlocked, r.code, "%s %s", r.out, r.errOut)
	require.Contains(t, r.errOut, "The upgrade of "+id+" from 2.0.0 to 3.0.0 is blocked by its plan; nothing was started:\n")
	require.Contains(t, r.errOut, "  blocked: pre-check hook: backing PVC is not bound\n")
	require.NotContains(t, r.out, "accepted")
	require.Equal(t, operations, strings.Count(w.ok(t, "service", "history", id), "\n"), "nothing was started")
	// --skip-plan starts it: the server's own checks refuse it.
	r = w.run(t, "service", "upgrade", "arcturus.galaxy.com", "--source", src3, "--skip-plan", "--wait")
	require.Equal(t, vcfctl.ExitBlocked, r.code, "%s %s", r.out, r.errOut)
	require.Contains(t, r.errOut, "upgrade "+id+" did not reach its goal: operation Failed")
	require.Regexp(t, `ERROR InstallTask: .*backing PVC is not bound`, r.errOut)
	require.Regexp(t, `Version\s+2\.0\.0`, w.ok(t, "service", "get", id), "the installed version stays")
	// Again: the bundle is cached now and the refusal may come before the
	// CLI looks; it is still this upgrade's refusal.
	r = w.run(t, "service", "upgrade", "arcturus.galaxy.com", "--source", src3, "--skip-plan", "--wait")
	require.Equal(t, vcfctl.ExitBlocked, r.code, "%s %s", r.out, r.errOut)
	require.Contains(t, r.errOut, "backing PVC is not bound")
	w.hook.answer(http.StatusOK, `{"results":[]}`)

	// 7. History, rollback, pause, resume.
	out = w.ok(t, "service", "history", "arcturus.galaxy.com")
	require.Regexp(t, `upgrade\s+1\.0\.0\s+2\.0\.0\s+Succeeded`, out)
	require.Regexp(t, `upgrade\s+2\.0\.0\s+3\.0\.0\s+Failed`, out)
	require.Contains(t, out, "Last known good version: 2.0.0")
	out = w.ok(t, "service", "rollback", "arcturus.galaxy.com", "--to", "1.0.0", "--wait")
	require.Contains(t, out, ": Healthy (active, version 1.0.0)")
	require.Contains(t, w.ok(t, "service", "pause", "arcturus.galaxy.com", "--wait"), "(paused, version 1.0.0)")
	require.Contains(t, w.ok(t, "service", "resume", "arcturus.galaxy.com", "--wait"), ": Healthy (active, version 1.0.0)")

	// 8. Lists: a second service, pages, sorting, FIQL.
	vega := v1
	vega.Name = "vega.galaxy.com"
	w.ok(t, "service", "create", w.publish(t, vega), "--wait")
	out = w.ok(t, "service", "list", "--page-size", "1", "--sort", "name")
	require.Contains(t, out, "arcturus.galaxy.com")
	require.NotContains(t, out, "vega.galaxy.com")
	require.Contains(t, out, "(page 1 of 2, 2 services; --all-pages for all)")
	out = w.ok(t, "service", "list", "--page-size", "1", "--sort", "name", "--desc", "--all-pages")
	require.Regexp(t, `(?s)vega\.galaxy\.com.*\narcturus\.galaxy\.com`, out, "descending, every page")
	out = w.ok(t, "service", "list", "--page-size", "1", "--all-pages", "-o", "json")
	require.Equal(t, 2, strings.Count(canonicalJSON(t, out), `"name": `), "one result set with both services: %s", out)
	out = w.ok(t, "service", "list", "--filter", "name==vega*")
	require.Contains(t, out, "vega.galaxy.com")
	require.NotContains(t, out, "arcturus.galaxy.com")
	w.ok(t, "service", "delete", "vega.galaxy.com", "--yes", "--wait")

	// 9. Catalog and Supervisor checks.
	require.Contains(t, w.ok(t, "catalog", "add", src2), "Registered")
	require.Eventually(t, func() bool {
		return strings.Contains(w.ok(t, "catalog", "list"), "2.0.0")
	}, time.Minute, 50*time.Millisecond)
	out = w.ok(t, "supervisor", "check", "supervisor-vc1", "--version", "9.1.0.0")
	require.Contains(t, out, "Supervisor supervisor-vc1 -> 9.1.0.0: allowed")
	require.Contains(t, out, "arcturus.galaxy.com")

	// 10. Delete and wait until gone; the watch saw it all and ended.
	out = w.ok(t, "service", "delete", "arcturus.galaxy.com", "--yes", "--wait")
	require.Contains(t, out, "delete: deleted")
	require.NotContains(t, w.ok(t, "service", "list"), "arcturus")
	r = w.run(t, "service", "get", "arcturus.galaxy.com")
	require.Equal(t, vcfctl.ExitError, r.code)
	require.Contains(t, r.errOut, `no service named "arcturus.galaxy.com"`)
	select {
	case wr := <-watched:
		require.Equal(t, 0, wr.code, "%s", wr.errOut)
		lines := strings.Split(strings.TrimSpace(wr.out), "\n")
		require.Greater(t, len(lines), 5)
		var compact []string
		for _, l := range lines {
			var c bytes.Buffer
			require.NoError(t, json.Compact(&c, []byte(l)), "one JSON document per line: %q", l)
			compact = append(compact, c.String())
		}
		require.Contains(t, strings.Join(compact, "\n"), `"version":"2.0.0"`)
		require.Contains(t, compact[len(compact)-1], `"deleted":true`)
		percentsNeverGoBack(t, lines)
	case <-time.After(time.Minute):
		t.Fatal("the watch did not end with the deletion")
	}
	select {
	case wr := <-watchedTable:
		require.Equal(t, 0, wr.code, "%s", wr.errOut)
		lines := strings.Split(strings.TrimSpace(wr.out), "\n")
		for _, l := range lines {
			require.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z  `, l, "one timestamped line per change")
		}
		require.Regexp(t, `  version 1\.0\.0  phase Upgrading  upgrade running: step [a-z-]+`, wr.out)
		require.Regexp(t, `  version 2\.0\.0  upgrade Succeeded\n`, wr.out, "the phase goes with the operation; its outcome is shown")
		require.True(t, strings.HasSuffix(lines[len(lines)-1], "  deleted"))
	case <-time.After(time.Minute):
		t.Fatal("the table watch did not end with the deletion")
	}

	require.Regexp(t, `^vcfctl \S+ \(commit \S+, go\S+\)\n$`, w.ok(t, "version"))
	require.Equal(t, w.ok(t, "version"), w.ok(t, "--version"))
	require.Contains(t, w.ok(t, "completion", "bash"), "bash completion")
	require.Equal(t, vcfctl.ExitUsage, w.run(t, "service", "frobnicate").code)
}

// background runs vcfctl in a goroutine; its result arrives on the channel.
func (w *world) background(t *testing.T, args ...string) <-chan result {
	t.Helper()
	out := make(chan result, 1)
	go func() {
		var o, e bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		code := vcfctl.Run(ctx, args, vcfctl.IO{In: strings.NewReader(""), Out: &o, Err: &e}, w.getenv)
		out <- result{code: code, out: o.String(), errOut: e.String()}
	}()
	return out
}

// percentsNeverGoBack checks, on the events 'watch -o json' printed (one
// per line), that each operation's percent only grows.
func percentsNeverGoBack(t *testing.T, lines []string) {
	t.Helper()
	last := map[string]int{}
	seen := 0
	for _, l := range lines {
		var ev struct {
			Operation *struct {
				ID      string `json:"id"`
				Step    string `json:"step"`
				Percent int    `json:"percent"`
			} `json:"operation"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &ev))
		op := ev.Operation
		if op == nil || op.Percent < 0 {
			continue
		}
		if p, ok := last[op.ID]; ok {
			require.GreaterOrEqual(t, op.Percent, p, "operation %s went back to %d%% at step %s", op.ID, op.Percent, op.Step)
			seen++
		}
		last[op.ID] = op.Percent
	}
	require.Greater(t, seen, 5, "several progress events were compared")
}

// field reads a key/value row of 'service get'.
func field(t *testing.T, out, key string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, key+" ") {
			return strings.TrimSpace(strings.TrimPrefix(l, key))
		}
	}
	t.Fatalf("no %s in %s", key, out)
	return ""
}
