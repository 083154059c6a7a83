package vcfctl_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"

	"github.com/vcfsm/vcfsm/cli/internal/vcfctl"
)

var unhealthyOnVC1 = simulator.Fault{Kind: "SupervisorService", Scope: "supervisor-vc1", Op: "apply", Effect: simulator.EffectUnhealthy,
	Message: "package reconcile failed on supervisor-vc1"}

// --wait goes by the operation's recorded outcome: an Unhealthy status
// after it succeeded gets --settle to heal before it counts; a wait that
// takes too long ends at --timeout with exit 4 and what is still pending.
func TestWaitJudgesTheOutcome(t *testing.T) {
	w := newWorld(t)
	w.login(t)
	sim := w.box.Sys.Lifecycle().Simulator()
	activate := func(name string) []string {
		return []string{"service", "activate", name, "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait"}
	}

	// Unhealthy for a while after the activation succeeded, then healed
	// by the controllers' next apply: the wait ends Healthy, as the
	// history says, instead of at the first Unhealthy.
	out := w.ok(t, "service", "create", w.publish(t, v1), "--wait")
	id := regexp.MustCompile(`Created (urn:\S+)`).FindStringSubmatch(out)[1]
	require.NoError(t, sim.InjectFault(unhealthyOnVC1))
	waiting := w.background(t, append(activate("arcturus.galaxy.com"), "--settle", "2m")...)
	poll := time.Now().Add(time.Minute)
	for !unhealthyFor(t, w, id, 2*time.Second) {
		require.True(t, time.Now().Before(poll), "the activation never left the service Unhealthy")
		select {
		case r := <-waiting:
			t.Fatalf("the wait ended while the service was Unhealthy: %d %s %s", r.code, r.out, r.errOut)
		case <-time.After(50 * time.Millisecond):
		}
	}
	sim.ClearFaults()
	r := <-waiting
	require.Equal(t, 0, r.code, "%s %s", r.out, r.errOut)
	require.Contains(t, r.out, "activate: apply (Unhealthy", "the wait saw the service Unhealthy after its activation succeeded")
	require.Contains(t, r.out, ": Healthy (active, version 1.0.0)")
	require.Regexp(t, `activate\s.*\sSucceeded`, w.ok(t, "service", "history", "arcturus.galaxy.com"))

	// Unhealthy for good: --settle passes, then exit 3 with the details.
	vega := v1
	vega.Name = "vega.galaxy.com"
	w.ok(t, "service", "create", w.publish(t, vega), "--wait")
	require.NoError(t, sim.InjectFault(unhealthyOnVC1))
	start := time.Now()
	r = w.run(t, append(activate("vega.galaxy.com"), "--settle", "3s")...)
	require.Equal(t, vcfctl.ExitBlocked, r.code, "%s %s", r.out, r.errOut)
	require.GreaterOrEqual(t, time.Since(start), 3*time.Second, "the status had --settle to heal")
	require.Contains(t, r.errOut, "did not reach its goal: the service stayed Unhealthy for 3s after the operation succeeded (--settle)")
	require.Regexp(t, `ERROR CustomResource: SupervisorService arcturus-install on supervisor-vc1: package reconcile failed on supervisor-vc1`, r.errOut)
	sim.ClearFaults()

	// A Supervisor slower than --timeout: exit 4, the operation goes on,
	// and the resources still pending are named with their Supervisor.
	// (The upgrade reaches its resources in a second or two; the timeout
	// leaves room for a loaded machine, the delay outlasts it.)
	require.NoError(t, sim.InjectFault(simulator.Fault{Kind: "SupervisorService", Scope: "supervisor-vc1", Op: "apply",
		Effect: simulator.EffectSlow, Delay: simulator.Duration(150 * time.Second)}))
	r = w.run(t, "service", "upgrade", "arcturus.galaxy.com", "--source", w.publish(t, v2), "--accept-plan-grants", "--wait", "--timeout", "45s")
	require.Equal(t, vcfctl.ExitTimeout, r.code, "%s %s", r.out, r.errOut)
	require.Contains(t, r.errOut, "not done after 45s (--timeout); the operation goes on (follow it with 'vcfctl service watch urn:vcloud:entity:broadcom:vcfService:")
	require.Contains(t, r.errOut, "  still pending:\n    SupervisorService arcturus-install on supervisor-vc1: Busy: Waiting for the target to finish\n")
	require.Contains(t, r.out, "upgrade: waiting for SupervisorService arcturus-install on supervisor-vc1", "plain progress names it too")
	require.Equal(t, vcfctl.ExitUsage, w.run(t, "service", "pause", "arcturus.galaxy.com", "--timeout", "1m").code, "--timeout goes with --wait")
}

// unhealthyFor tells whether the service's operation succeeded and it has
// been Unhealthy for at least d (a resource's last change is that old).
func unhealthyFor(t *testing.T, w *world, id string, d time.Duration) bool {
	t.Helper()
	resp := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"?state=true", nil)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var svc struct {
		Status string
		State  struct {
			Operation struct{ Outcome string }
			Resources []struct{ Status, LastModified string }
		}
	}
	resp.JSON(t, &svc)
	if svc.Status != "Unhealthy" || svc.State.Operation.Outcome != "Succeeded" {
		return false
	}
	for _, r := range svc.State.Resources {
		if at, err := time.Parse(time.RFC3339Nano, r.LastModified); err == nil && r.Status == "Unhealthy" && time.Since(at) >= d {
			return true
		}
	}
	return false
}

// What can be known before anything starts is refused at once, and
// nothing is left behind: a second service of a registered package (409,
// or after its download when only the download can tell), an upgrade to
// an older version, an upgrade its plan blocks.
func TestRefusedUpFront(t *testing.T) {
	w := newWorld(t)
	w.login(t)
	src1, src2 := w.publish(t, v1), w.publish(t, v2)
	out := w.ok(t, "service", "create", src1, "--wait")
	id := regexp.MustCompile(`Created (urn:\S+)`).FindStringSubmatch(out)[1]

	r := w.run(t, "service", "create", src1, "--wait")
	require.Equal(t, vcfctl.ExitError, r.code, "%s %s", r.out, r.errOut)
	require.Equal(t, "Error: arcturus.galaxy.com is already registered as service "+id+" (version 1.0.0): upgrade that service "+
		"('vcfctl service upgrade "+id+" --source SOURCE') or register this version with 'vcfctl catalog add SOURCE'\n", r.errOut)
	require.Empty(t, r.out, "nothing was created")
	// A source the catalog does not know: only its download tells.
	r = w.run(t, "service", "create", src2, "--wait")
	require.Equal(t, vcfctl.ExitBlocked, r.code, "%s %s", r.out, r.errOut)
	require.Contains(t, r.errOut, "did not reach its goal: operation Failed; the service was removed\n")
	require.Contains(t, r.errOut, "  step download: arcturus.galaxy.com is already registered as service "+id)
	require.Equal(t, 1, strings.Count(w.ok(t, "service", "list", "-o", "json"), `"id"`), "no nameless service is left")

	w.ok(t, "service", "activate", "arcturus.galaxy.com", "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait")
	w.ok(t, "catalog", "add", src2)
	require.Contains(t, w.ok(t, "service", "upgrade", "arcturus.galaxy.com", "--version", "2.0.0", "--accept-plan-grants", "--wait"), ": Healthy (active, version 2.0.0)")
	history := w.ok(t, "service", "history", id)
	for _, args := range [][]string{
		{"service", "upgrade", "arcturus.galaxy.com", "--source", src1},                // the plan refuses
		{"service", "upgrade", "arcturus.galaxy.com", "--source", src1, "--skip-plan"}, // the server refuses
	} {
		r = w.run(t, args...)
		require.Equal(t, vcfctl.ExitError, r.code, "%s: %s %s", args, r.out, r.errOut)
		require.Contains(t, r.errOut, "version 1.0.0 is older than the installed 2.0.0: downgrades go through 'vcfctl service rollback arcturus.galaxy.com'")
		require.NotContains(t, r.out, "accepted")
	}
	require.Equal(t, history, w.ok(t, "service", "history", id), "no upgrade was started")
	r = w.run(t, "service", "upgrade", "arcturus.galaxy.com", "--version", "9.9.9")
	require.Equal(t, vcfctl.ExitError, r.code)
	require.Contains(t, r.errOut, "version 9.9.9 of arcturus.galaxy.com is not registered (registered: ")

	// rollback without --to: the version the last upgrade replaced.
	out = w.ok(t, "service", "rollback", "arcturus.galaxy.com", "--wait")
	require.Contains(t, out, "Rollback of "+id+" to the previous version accepted")
	require.Contains(t, out, ": Healthy (active, version 1.0.0)")

	// delete: confirmation, --ignore-not-found.
	r = w.run(t, "service", "delete", "arcturus.galaxy.com")
	require.Equal(t, vcfctl.ExitUsage, r.code)
	require.Contains(t, r.errOut, "pass --yes (-y) when standard input is not a terminal")
	require.Contains(t, w.ok(t, "service", "delete", "arcturus.galaxy.com", "-y", "--wait"), "delete: deleted")
	r = w.run(t, "service", "delete", "arcturus.galaxy.com", "-y")
	require.Equal(t, vcfctl.ExitError, r.code)
	require.Contains(t, r.errOut, `no service named "arcturus.galaxy.com"`)
	require.Contains(t, w.ok(t, "service", "delete", "arcturus.galaxy.com", "-y", "--ignore-not-found"), "does not exist; nothing to delete")
	require.Contains(t, w.ok(t, "service", "delete", id, "-y", "--ignore-not-found"), "does not exist; nothing to delete")
}

// Errors come in vcfctl's words: no HTTP preamble, the context and token
// behind a 401, a server that is no Service Manager said so plainly, a
// closed stream said in words, bad filters and --until values as usage
// errors.
func TestErrorsInVcfctlWords(t *testing.T) {
	w := newWorld(t)
	var tokensSent atomic.Int32
	foreign := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			tokensSent.Add(1)
		}
		rw.Header().Set("Content-Type", "application/json")
		_, _ = rw.Write([]byte(`{"values":[],"resultTotal":0}`))
	}))
	t.Cleanup(foreign.Close)
	tokenFile := filepath.Join(w.tmp, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(strings.Repeat("x", 32)), 0o600))
	r := w.run(t, "login", "--server", foreign.URL, "--token-file", tokenFile, "--context", "other")
	require.Equal(t, vcfctl.ExitError, r.code)
	require.Contains(t, r.errOut, foreign.URL+" does not answer as a VCF Service Manager (HTTP 200, application/json: no X-Vcfsm-Api-Version header)")
	require.NotContains(t, w.ok(t, "context", "list"), "other", "nothing was saved")
	require.Zero(t, tokensSent.Load(), "login asks who the server is before it sends the token")
	w.env["VCFCTL_SERVER"] = foreign.URL
	r = w.run(t, "service", "list")
	require.Equal(t, vcfctl.ExitError, r.code, "an empty table from another server is not an answer")
	require.Contains(t, r.errOut, "does not answer as a VCF Service Manager")
	delete(w.env, "VCFCTL_SERVER")

	w.login(t)
	require.NoError(t, os.WriteFile(tokenFile, []byte("rotated-but-wrong-token-0123456789"), 0o600))
	r = w.run(t, "service", "list")
	require.Equal(t, vcfctl.ExitError, r.code)
	require.Equal(t, "Error: "+w.box.URL+` refused the token of context "box" (token file `+tokenFile+`): missing or invalid bearer token; `+
		"log in again ('vcfctl login --server "+w.box.URL+" --token-file FILE'), or set VCFCTL_TOKEN\n", r.errOut)
	w.env["VCFCTL_TOKEN"] = "another-wrong-token-0123456789abc"
	require.Contains(t, w.run(t, "service", "list").errOut, `refused the token of context "box" (VCFCTL_TOKEN)`)
	delete(w.env, "VCFCTL_TOKEN")
	w.login(t)

	require.Contains(t, w.ok(t, "service", "list"), "No services found.")
	r = w.run(t, "service", "list", "--filter", "nme==x")
	require.Equal(t, vcfctl.ExitUsage, r.code, "a bad filter is a usage error")
	require.Contains(t, r.errOut, `filter: unknown field "nme"`)
	require.NotContains(t, r.errOut, "400")
	w.ok(t, "service", "create", w.publish(t, v1), "--wait")
	require.Contains(t, w.ok(t, "service", "list", "--filter", "status==unresolved;lifecycleState==INACTIVE"), "arcturus.galaxy.com",
		"status values in any case, as --until takes them")
	r = w.run(t, "service", "watch", "arcturus.galaxy.com", "--until", "Helthy")
	require.Equal(t, vcfctl.ExitUsage, r.code)
	require.Contains(t, r.errOut, `--until "Helthy" is not a status: want one of Ready, Unresolved, Healthy, Busy, Unhealthy, Maintenance, Unavailable`)

	watched := w.background(t, "service", "watch", "arcturus.galaxy.com")
	require.Eventually(t, func() bool { return openWatches(t, w) > 0 }, time.Minute, 20*time.Millisecond)
	require.NoError(t, w.box.Stop())
	select {
	case wr := <-watched:
		require.Equal(t, vcfctl.ExitError, wr.code, "%s", wr.out)
		require.Contains(t, wr.errOut, "the server closed the watch of urn:vcloud:entity:broadcom:vcfService:")
		require.NotContains(t, wr.errOut, "goaway")
		require.NotContains(t, wr.errOut, "transport")
	case <-time.After(time.Minute):
		t.Fatal("the watch did not end when the server stopped")
	}
}

// openWatches counts the watch streams open on the lifecycle service,
// from its gRPC metrics: started less handled.
func openWatches(t *testing.T, w *world) int {
	t.Helper()
	resp, err := http.Get(w.box.MetricsURL) //nolint:noctx // a test's read of its own system's metrics
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	open := 0
	for _, m := range watchMetric.FindAllStringSubmatch(string(raw), -1) {
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		if m[1] == "started" {
			open += n
		} else {
			open -= n
		}
	}
	return open
}

var watchMetric = regexp.MustCompile(`(?m)^grpc_server_(started|handled)_total\{[^}]*grpc_method="WatchService"[^}]*\} (\d+)$`)

// -o json where programs read the answer: create prints the service,
// render values and resources their JSON form.
func TestOutputsForPrograms(t *testing.T) {
	w := newWorld(t)
	w.login(t)
	r := w.run(t, "service", "create", w.publish(t, v1), "--wait", "-o", "json")
	require.Equal(t, 0, r.code, "%s", r.errOut)
	var svc struct{ ID, Name, Status string }
	require.NoError(t, json.Unmarshal([]byte(r.out), &svc), "standard output is the service alone: %q", r.out)
	require.Equal(t, "arcturus.galaxy.com", svc.Name)
	require.Equal(t, "Unresolved", svc.Status, "after --wait: the service as it is at the end")
	require.Contains(t, r.errOut, "create: download", "progress goes to standard error")

	var values map[string]any
	require.NoError(t, json.Unmarshal([]byte(w.ok(t, "service", "render", "arcturus.galaxy.com", "values", "-o", "json")), &values))
	require.Contains(t, values, "regions")
	var resources []map[string]any
	require.NoError(t, json.Unmarshal([]byte(w.ok(t, "service", "render", "arcturus.galaxy.com", "resources", "-o", "json")), &resources))
	require.NotEmpty(t, resources)
	kinds := map[string]bool{}
	for _, res := range resources {
		kinds[res["kind"].(string)] = true
	}
	require.True(t, kinds["GlobalRole"] && kinds["SupervisorService"], "%v", kinds)
	require.Contains(t, w.ok(t, "service", "render", "arcturus.galaxy.com", "values", "-o", "yaml"), "regions:")
	require.Equal(t, vcfctl.ExitUsage, w.run(t, "service", "render", "arcturus.galaxy.com", "values", "-o", "xml").code)
}
