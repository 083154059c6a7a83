package vcfctl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"

	"github.com/vcfsm/vcfsm/cli/internal/vcfctl"
)

// fastRollouts looks at rolled-out targets often.
func fastRollouts(c *app.Config) { c.Lifecycle.RolloutPoll = 20 * time.Millisecond }

// Strategy files: the canary region first, then the rest (JSON, with an
// approval before the rest; YAML, without).
const (
	canaryApprovalJSON = `{"waves":[{"name":"canary","regions":["us-west-1"]},{"name":"rest","rest":true,"approval":true}]}`
	canaryRestYAML     = "waves:\n  - name: canary\n    regions: [us-west-1]\n  - name: rest\n    rest: true\n"
)

// rolloutState reads 'rollout get -o json' (zero before the rollout laid
// out its waves).
type rolloutState struct {
	State   string `json:"state"`
	Reason  string `json:"reason"`
	Targets []struct {
		Supervisor, Version, State string
	} `json:"targets"`
}

func (w *world) rolloutState(t *testing.T, svc string) rolloutState {
	t.Helper()
	var r rolloutState
	res := w.run(t, "rollout", "get", svc, "-o", "json")
	if res.code != 0 {
		require.Contains(t, res.errOut, "has never rolled out")
		return r
	}
	require.NoError(t, json.Unmarshal([]byte(res.out), &r))
	return r
}

// waitRolloutState polls 'rollout get' until the rollout is in state.
func (w *world) waitRolloutState(t *testing.T, svc, state string) rolloutState {
	t.Helper()
	var r rolloutState
	require.Eventually(t, func() bool { r = w.rolloutState(t, svc); return r.State == state }, 90*time.Second, 50*time.Millisecond,
		"rollout %s", state)
	return r
}

func (w *world) file(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(w.tmp, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// A --rollout file with a mistake is refused before anything starts, the
// error naming the file, its line and the field; the server's own
// refusals of a strategy are placed in the file too.
func TestRolloutFileErrors(t *testing.T) {
	w := newWorld(t, fastRollouts)
	w.login(t)
	w.ok(t, "service", "create", w.publish(t, v1), "--wait")
	w.ok(t, "service", "activate", arcturusName, "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait")
	src2 := w.publish(t, v2)

	for _, tc := range []struct{ name, content, want string }{
		{"unknown.yaml", "waves:\n  - name: canary\n    region: [us-west-1]\n", `unknown.yaml: line 3, waves[0]: unknown field "region" (known: name, regions, supervisors, labels, rest,`},
		{"soak.yaml", "waves:\n  - name: canary\n    regions: [us-west-1]\n    soak: 5 minutes\n", `soak.yaml: line 4, waves[0].soak: "5 minutes" is not a duration`},
		{"policy.json", "{\"waves\": [\n {\"rest\": true,\n  \"onFailure\": \"retry\"}]}", `policy.json: line 3, waves[0].onFailure: "retry": want rollback (the default) or pause`},
		{"count.yaml", "waves:\n  - rest: true\n    maxConcurrent: two\n", `count.yaml: line 3, waves[0].maxConcurrent: "two" is not a whole number`},
		{"list.yaml", "waves:\n  name: canary\n", `list.yaml: line 2, waves: want a list, got a mapping`},
		{"broken.yaml", "waves: [\n", "broken.yaml is neither YAML nor JSON"},
		{"empty.yaml", "gateTimeout: 1m\n", "empty.yaml: a strategy needs at least one wave"},
		{"missing.yaml", "", "missing.yaml: no such file"},
		// The server's refusal, placed in the file by its field path.
		{"tworest.yaml", "waves:\n  - rest: true\n  - name: more\n    rest: true\n", "[" + filepath.Join(w.tmp, "tworest.yaml") + " line 3 (waves[1])]"},
	} {
		path := filepath.Join(w.tmp, tc.name)
		if tc.content != "" {
			path = w.file(t, tc.name, tc.content)
		}
		r := w.run(t, "service", "upgrade", arcturusName, "--source", src2, "--accept-plan-grants", "--rollout", path, "--wait")
		require.Equal(t, vcfctl.ExitError, r.code, "%s: %s %s", tc.name, r.out, r.errOut)
		require.Contains(t, r.errOut, tc.want, tc.name)
		if tc.name == "tworest.yaml" {
			require.Contains(t, r.errOut, "rollout.waves[1]: only one wave may be rest: true", "the server's refusal")
		}
	}
	// Nothing started: the service never rolled out.
	r := w.run(t, "rollout", "get", arcturusName)
	require.Equal(t, vcfctl.ExitError, r.code)
	require.Contains(t, r.errOut, "has never rolled out")
	require.Regexp(t, `Version\s+1\.0\.0`, w.ok(t, "service", "get", arcturusName))
	r = w.run(t, "rollout", "pause", arcturusName)
	require.Equal(t, vcfctl.ExitError, r.code, "no rollout to pause")
	require.Contains(t, r.errOut, "has no rollout running")
}

// upgrade --rollout --wait shows each wave and waits through an approval
// given with 'rollout approve'; 'rollout get' and 'service get' show the
// rollout while it runs.
func TestRolloutUpgradeWithApproval(t *testing.T) {
	w := newWorld(t, fastRollouts)
	w.login(t)
	w.ok(t, "service", "create", w.publish(t, v1), "--wait")
	w.ok(t, "service", "activate", arcturusName, "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait")
	src2 := w.publish(t, v2)

	var progress syncBuffer
	upgrade := make(chan int, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		upgrade <- vcfctl.Run(ctx, []string{"service", "upgrade", arcturusName, "--source", src2, "--accept-plan-grants", "--rollout", w.file(t, "canary.json", canaryApprovalJSON), "--wait"},
			vcfctl.IO{In: strings.NewReader(""), Out: &progress, Err: &progress}, w.getenv)
	}()
	// The wait says what it waits for before anyone approves.
	hint := "upgrade: wave 2 (rest) waits for an administrator's approval: 'vcfctl rollout approve arcturus.galaxy.com'"
	require.Eventually(t, func() bool {
		select {
		case code := <-upgrade:
			require.Failf(t, "upgrade --wait ended before the approval", "exit %d\n%s", code, progress.String())
		default:
		}
		return strings.Contains(progress.String(), hint)
	}, 90*time.Second, 50*time.Millisecond)
	r := w.rolloutState(t, arcturusName)
	require.Equal(t, "WaitingApproval", r.State)
	require.Len(t, r.Targets, 2)
	out := w.ok(t, "rollout", "get", arcturusName)
	require.Contains(t, out, "Rollout 1.0.0 -> 2.0.0: WaitingApproval")
	require.Regexp(t, `1\s+canary\s+Done\s+1\s+1\s+0\s+0\s+0\s+-`, out, "the canary wave is done")
	require.Regexp(t, `2\s+rest\s+WaitingApproval\s+1\s+0\s+0\s+0\s+1\s+-`, out, "the rest waits for approval")
	require.Regexp(t, `supervisor-vc1\s+us-west-1\s+1\s+2\.0\.0\s+Done`, out)
	require.Regexp(t, `supervisor-eu1\s+eu-central-1\s+2\s+1\.0\.0\s+Pending`, out)
	require.Regexp(t, `Rollout\s+to 2\.0\.0 WaitingApproval, wave 2 of 2: 1/2 done, 0 failed, 0 waiting for a window`,
		w.ok(t, "service", "get", arcturusName))
	require.Contains(t, w.ok(t, "rollout", "get", arcturusName, "-o", "yaml"), "state: WaitingApproval")

	require.Contains(t, w.ok(t, "rollout", "approve", arcturusName), "Approved wave 2 (rest) of the rollout of urn:")
	select {
	case code := <-upgrade:
		require.Equal(t, vcfctl.ExitOK, code, "%s", progress.String())
	case <-time.After(2 * time.Minute):
		t.Fatal("upgrade --wait did not end after the approval")
	}
	for _, want := range []string{
		"upgrade: wave 1/2 canary: Done: 1/1 done, 0 failed, 0 waiting for a window, 0 waiting for approval",
		"upgrade: wave 2/2 rest: WaitingApproval: 0/1 done, 0 failed, 0 waiting for a window, 1 waiting for approval",
		"upgrade: wave 2/2 rest: Done: 1/1 done",
		": Healthy (active, version 2.0.0)",
	} {
		require.Contains(t, progress.String(), want)
	}
	require.Equal(t, "Succeeded", w.rolloutState(t, arcturusName).State)
}

// A wave that fails rolls back: upgrade --wait ends with exit 3, naming the
// failed target and the quarantine; the catalog shows the quarantine,
// 'version clear' and 'version quarantine' change it; pause, resume and
// abort steer a running rollout; the provider's strategies are set from a
// file and an upgrade without --rollout follows the default one.
func TestRolloutRollbackQuarantineAndControls(t *testing.T) {
	w := newWorld(t, fastRollouts)
	w.login(t)
	w.ok(t, "service", "create", w.publish(t, v1), "--wait")
	w.ok(t, "service", "activate", arcturusName, "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait")
	src2 := w.publish(t, v2)
	sim := w.box.Sys.Lifecycle().Simulator()
	require.NoError(t, sim.InjectFault(simulator.Fault{Scope: "supervisor-eu1", Kind: "SupervisorService", Op: "apply", Effect: simulator.EffectUnhealthy, Times: 1}))

	r := w.run(t, "service", "upgrade", arcturusName, "--source", src2, "--accept-plan-grants", "--rollout", w.file(t, "rest.yaml", canaryRestYAML), "--wait")
	require.Equal(t, vcfctl.ExitBlocked, r.code, "rolled back: exit 3\n%s\n%s", r.out, r.errOut)
	require.Contains(t, r.errOut, "upgrade of arcturus.galaxy.com to 2.0.0 did not reach its goal: the rollout rolled back: wave rest: 1 of 1 target(s) failed")
	require.Regexp(t, `supervisor-eu1 \(wave 2\): RolledBack, version 1\.0\.0`, r.errOut)
	require.Contains(t, r.errOut, "version 2.0.0 is quarantined: 'vcfctl catalog list' shows it, 'vcfctl version clear NAME 2.0.0' clears it")
	require.Contains(t, r.out, "upgrade: wave 1/2 canary: RolledBack", "the waves as they ended")
	require.Regexp(t, `2\.0\.0\s+Quarantined\s+\S+\s+since .* by .*wave rest`, w.ok(t, "catalog", "list"))
	refused := w.run(t, "service", "upgrade", arcturusName, "--source", src2, "--skip-plan")
	require.Equal(t, vcfctl.ExitError, refused.code)
	require.Contains(t, refused.errOut, "is quarantined since")
	require.Contains(t, refused.errOut, "an administrator clears it first ('vcfctl version clear arcturus.galaxy.com 2.0.0')", "in vcfctl's words")
	require.Equal(t, vcfctl.ExitUsage, w.run(t, "service", "upgrade", arcturusName, "--source", src2, "--accept-plan-grants", "--strategy", "x", "--all-at-once").code)

	require.Contains(t, w.ok(t, "version", "clear", arcturusName, "2.0.0"), "Version 2.0.0 of arcturus.galaxy.com cleared")
	require.NotContains(t, w.ok(t, "catalog", "list"), "Quarantined")
	require.Equal(t, vcfctl.ExitUsage, w.run(t, "version", "quarantine", arcturusName, "2.0.0").code, "--reason is required")
	require.Contains(t, w.ok(t, "version", "quarantine", arcturusName, "2.0.0", "--reason", "bad canary"), "Version 2.0.0 of arcturus.galaxy.com quarantined: bad canary")
	require.Regexp(t, `2\.0\.0\s+Quarantined.*bad canary`, w.ok(t, "catalog", "list"))
	w.ok(t, "version", "clear", arcturusName, "2.0.0")
	require.Regexp(t, `^vcfctl `, w.ok(t, "version"), "version alone still prints vcfctl's version")

	// --timeout while the rollout waits for approval: exit 4, it goes on.
	// Then pause, resume, abort.
	r = w.run(t, "service", "upgrade", arcturusName, "--source", src2, "--accept-plan-grants", "--rollout", w.file(t, "canary.json", canaryApprovalJSON), "--wait", "--timeout", "3s")
	require.Equal(t, vcfctl.ExitTimeout, r.code, "%s\n%s", r.out, r.errOut)
	require.Contains(t, r.errOut, "upgrade arcturus.galaxy.com: not done after 3s (--timeout); the rollout goes on (follow it with 'vcfctl rollout get arcturus.galaxy.com')")
	require.Contains(t, r.errOut, "  rollout 1.0.0 -> 2.0.0: WaitingApproval, wave 2 of 2")
	require.Contains(t, r.errOut, "  wave 2/2 rest: WaitingApproval: 0/1 done, 0 failed, 0 waiting for a window, 1 waiting for approval")
	w.waitRolloutState(t, arcturusName, "WaitingApproval")
	require.Contains(t, w.ok(t, "rollout", "pause", arcturusName), "Pause of the rollout of urn:")
	w.waitRolloutState(t, arcturusName, "Paused")
	require.Contains(t, w.ok(t, "rollout", "resume", arcturusName), "Resume of the rollout of urn:")
	w.waitRolloutState(t, arcturusName, "WaitingApproval")
	require.Contains(t, w.ok(t, "rollout", "abort", arcturusName, "--reason", "not today"), "rolls back to 1.0.0")
	rs := w.waitRolloutState(t, arcturusName, "RolledBack")
	require.Contains(t, rs.Reason, "aborted by e2e")
	history := w.ok(t, "service", "history", arcturusName)
	for _, typ := range []string{"rollout-pause", "rollout-resume", "rollout-abort"} {
		require.Contains(t, history, typ)
	}
	w.ok(t, "version", "clear", arcturusName, "2.0.0")

	// The provider's strategies; an upgrade that names none rolls out by
	// the default.
	r = w.run(t, "rollout", "strategies", "set", w.file(t, "twice.yaml",
		"strategies:\n  - name: a\n    waves: [{rest: true}]\n  - name: a\n    waves: [{rest: true}]\n"))
	require.Equal(t, vcfctl.ExitError, r.code)
	require.Contains(t, r.errOut, "appears twice")
	require.Contains(t, r.errOut, "twice.yaml line 4 (strategies[1].name)]")
	strategies := "strategies:\n  - name: canary-first\n    waves:\n" +
		"      - {name: canary, regions: [us-west-1]}\n      - {name: rest, rest: true}\ndefaultRollout: canary-first\n"
	require.Contains(t, w.ok(t, "rollout", "strategies", "set", w.file(t, "strategies.yaml", strategies)),
		"Rollout strategies replaced: 1 strategy, default canary-first")
	require.Contains(t, w.ok(t, "rollout", "strategies", "get"), "defaultRollout: canary-first")
	require.Regexp(t, `"name":\s*"canary-first"`, w.ok(t, "rollout", "strategies", "get", "-o", "json"))
	r = w.run(t, "service", "upgrade", arcturusName, "--source", src2, "--accept-plan-grants", "--strategy", "nosuch")
	require.Equal(t, vcfctl.ExitError, r.code)
	require.Contains(t, r.errOut, `the upgrade names rollout strategy "nosuch", which the provider has not defined ('vcfctl rollout strategies set FILE')`)
	out := w.ok(t, "service", "upgrade", arcturusName, "--source", src2, "--accept-plan-grants", "--wait")
	require.Contains(t, out, "upgrade: wave 1/2 canary: Done: 1/1 done")
	require.Contains(t, out, "upgrade: wave 2/2 rest: Done: 1/1 done")
	require.Contains(t, out, ": Healthy (active, version 2.0.0)")
	require.Contains(t, w.ok(t, "rollout", "get", arcturusName), "Rollout 1.0.0 -> 2.0.0: Succeeded")
	// --all-at-once: no rollout although a default applies.
	out = w.ok(t, "service", "upgrade", arcturusName, "--source", w.publish(t, v3), "--all-at-once", "--wait")
	require.NotContains(t, out, "wave")
	require.Contains(t, out, ": Healthy (active, version 3.0.0)")
	require.Contains(t, w.ok(t, "rollout", "get", arcturusName), "Rollout 1.0.0 -> 2.0.0: Succeeded", "the last rollout is still the one to 2.0.0")
}

// syncBuffer is a buffer a running command writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// On a terminal, upgrade --rollout --wait draws a bar per wave (targets
// done of the wave's, the wave's counts as its label) and the rollout's
// line above them; then the usual end.
func TestRolloutProgressOnATerminal(t *testing.T) {
	w := newWorld(t, fastRollouts)
	w.login(t)
	w.ok(t, "service", "create", w.publish(t, v1), "--wait")
	w.ok(t, "service", "activate", arcturusName, "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait")
	src2 := w.publish(t, v2)

	_, scr := w.onTerminal(t, "Healthy (active, version 2.0.0)",
		"service", "upgrade", arcturusName, "--source", src2, "--accept-plan-grants", "--rollout", w.file(t, "rest.yaml", canaryRestYAML), "--wait")
	for _, want := range []string{
		"upgrade: rollout 1.0.0 -> 2.0.0: Succeeded, wave 2 of 2",
		"upgrade: wave 1/2 canary: Done: 1/1 done, 0 failed, 0 waiting for a window, 0 waiting for approval",
		"upgrade: wave 2/2 rest: Done: 1/1 done",
	} {
		require.Contains(t, scr, want)
	}
	require.Regexp(t, `wave 1/2 canary: Done: [^\n]*\[=+\]\s+100 %`, scr, "a bar per wave, complete")
	require.Regexp(t, `wave 2/2 rest: Done: [^\n]*\[=+\]\s+100 %`, scr, "a bar per wave, complete")
}

// A rollout whose rollback would downgrade a SupervisorService holds and
// waits for an administrator: upgrade --wait ends with exit 3 and says so.
func TestRolloutRollbackRefused(t *testing.T) {
	w := newWorld(t, fastRollouts)
	w.login(t)
	w.ok(t, "service", "create", w.publish(t, v1), "--wait")
	w.ok(t, "service", "activate", arcturusName, "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait")
	newer := v2
	newer.SSVersion = "2.0.0"
	src2 := w.publish(t, newer)
	sim := w.box.Sys.Lifecycle().Simulator()
	require.NoError(t, sim.InjectFault(simulator.Fault{Scope: "supervisor-eu1", Kind: "SupervisorService", Op: "apply", Effect: simulator.EffectUnhealthy, Times: 1}))

	r := w.run(t, "service", "upgrade", arcturusName, "--source", src2, "--accept-plan-grants", "--rollout", w.file(t, "rest.yaml", canaryRestYAML), "--wait")
	require.Equal(t, vcfctl.ExitBlocked, r.code, "%s\n%s", r.out, r.errOut)
	require.Contains(t, r.errOut, "upgrade of arcturus.galaxy.com to 2.0.0 did not reach its goal: the rollout needs an administrator: its rollback was refused: ")
	require.Contains(t, r.errOut, "cannot be downgraded")
	require.Equal(t, "RollbackRefused", w.rolloutState(t, arcturusName).State)
}
