package vcfsm_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// cellStates are the grid's target states by Supervisor.
const cellStates = `Object.fromEntries([...document.querySelectorAll('#targets .cell')].map((c) => [c.dataset.sup, c.dataset.state]))`

// rolloutShows waits until the rollout page shows the rollout in state.
func (b *browser) rolloutShows(state string, timeout time.Duration) {
	b.t.Helper()
	b.waitFor("the rollout "+state, timeout, fmt.Sprintf("(document.querySelector('#rollout-state')||{dataset:{}}).dataset.state === %q", state))
}

// The buttons and fields of the rollout pages a viewer may meet: they
// filter and read; none of them writes. The grid's cells are read
// controls too (they show a target's details).
var viewerRolloutControls = map[string]bool{"rollout-state-filter": true, "rollouts-apply": true, "target-state": true, "target-filter": true, "sign-out": true}

const rolloutControls = `[...document.querySelectorAll('main button:not(.cell), main a.button, main input, main select, header button')].map((e) => e.id || e.textContent.trim())`

// A rollout that waits for an approval, driven from the page: a viewer
// sees it and no control that writes; an operator may pause but not
// approve, and a token that lost its rights gets the 403 with the
// server's reason; the administrator approves from the page and the grid
// turns Done.
func TestConsoleRolloutApproval(t *testing.T) {
	w := newWorld(t, fastRollouts)
	id := w.installed(t, w.publish(t, v1))
	src2 := w.publish(t, v2)
	patch(t, w, id, `{"source":"`+src2+`"`+acceptV2+`,"rollout":{"strategy":`+fmt.Sprintf(canaryThenRest, `,"approval":true`)+`}}`, http.StatusAccepted)
	waitRollout(t, w, id, "WaitingApproval")
	b := newBrowser(t, w.box.URL)

	b.signIn(onebox.ViewerToken, "audit", "viewer")
	require.Equal(t, []string{"Services", "Rollouts", "Inventory"}, evalAs[[]string](b, "[...document.querySelectorAll('#nav a')].map((a) => a.textContent)"))
	b.click("#nav a[href='#/rollouts']")
	b.waitSelector("#rollouts tr[data-state=WaitingApproval]", time.Minute)
	require.Contains(t, b.text("#rollouts"), "1.0.0 → 2.0.0")
	require.Contains(t, b.text("#rollouts"), "1 done, 0 failed, 0 waiting for a window, of 2")
	require.Contains(t, b.text("#quarantine"), "No version is quarantined.")
	for _, ctl := range evalAs[[]string](b, rolloutControls) {
		require.True(t, viewerRolloutControls[ctl], "the Rollouts page shows the viewer the control %q", ctl)
	}
	b.click("#rollouts tbody a")
	b.rolloutShows("WaitingApproval", time.Minute)
	require.Equal(t, map[string]string{"supervisor-vc1": "Done", "supervisor-eu1": "Pending"}, evalAs[map[string]string](b, cellStates))
	require.False(t, evalAs[bool](b, "!!document.querySelector('#rollout-actions')"), "a viewer gets no rollout action")
	for _, ctl := range evalAs[[]string](b, rolloutControls) {
		require.True(t, viewerRolloutControls[ctl], "the rollout page shows the viewer the control %q", ctl)
	}
	require.Empty(t, evalAs[[]string](b, unlabelled))
	// The grid is one tab stop; the arrow keys move in it and the focused
	// target's details show.
	b.eval("document.querySelector('#targets .cell[tabindex=\"0\"]').focus()")
	require.Contains(t, b.text("#target-detail"), "Supervisor supervisor-vc1")
	b.run(10*time.Second, chromedp.KeyEvent(kb.ArrowRight))
	require.Equal(t, "supervisor-eu1", evalAs[string](b, "document.activeElement.dataset.sup"))
	b.waitFor("the details of eu1", 10*time.Second, "/Supervisor supervisor-eu1/.test(document.querySelector('#target-detail').innerText)")
	require.Equal(t, 1, evalAs[int](b, "document.querySelectorAll('#targets .cell[tabindex=\"0\"]').length"), "one tab stop")
	b.click("#sign-out")

	// An operator pauses and resumes, but is not offered approve or abort.
	b.signIn(onebox.OperatorToken, "ops", "operator")
	b.route("#/services/" + encodeID(id) + "/rollout")
	b.waitSelector("#rollout-pause", time.Minute)
	require.False(t, evalAs[bool](b, "!!document.querySelector('#rollout-approve, #rollout-abort')"), "approving and aborting are an administrator's")
	// The tab's token loses its rights: the server refuses, the page says why.
	b.eval("sessionStorage.setItem('vcfsm.token', " + jsString(onebox.ViewerToken) + ")")
	b.expectConsole("status of 403")
	b.click("#rollout-pause")
	b.waitFor("the refusal", 30*time.Second, "/403 Forbidden/.test(document.querySelector('#notice').innerText)")
	require.Contains(t, b.text("#notice"), `principal "audit" has role viewer`)
	require.Equal(t, "WaitingApproval", w.rollout(t, id).State, "nothing changed")
	b.click("#sign-out")

	// The administrator approves from the page; the grid turns Done.
	b.signIn(onebox.Token, "e2e", "admin")
	b.route("#/services/" + encodeID(id) + "/rollout")
	b.waitSelector("#rollout-approve", time.Minute)
	b.screenshot("rollout")
	b.click("#rollout-approve")
	b.click("#dlg-confirm")
	b.rolloutShows("Succeeded", 2*time.Minute)
	b.waitFor("every cell Done", time.Minute, "[...document.querySelectorAll('#targets .cell')].every((c) => c.dataset.state === 'Done')")
	require.Equal(t, map[string]string{"supervisor-vc1": "Done", "supervisor-eu1": "Done"}, evalAs[map[string]string](b, cellStates))
	require.Contains(t, b.text("#waves"), "e2e", "the wave shows who approved it")
	require.False(t, evalAs[bool](b, "!!document.querySelector('#rollout-actions')"), "a finished rollout offers nothing")
	require.Equal(t, "e2e", w.rollout(t, id).Waves[1].ApprovedBy)
	b.checkConsole()
}

// A rollout started from the upgrade page with a stored strategy (the
// fleet plan's line per Supervisor shown first) whose second wave fails
// rolls back: the page shows every target RolledBack and the reason, and
// the version quarantined; a viewer is not offered Clear; the
// administrator clears it from the page.
func TestConsoleRolloutRolledBackAndQuarantineCleared(t *testing.T) {
	w := newWorld(t, fastRollouts)
	id := w.installed(t, w.publish(t, v1))
	// A 2.0.0 with 1.0.0's access grants: nothing to accept (the page
	// accepting changed terms is TestConsoleUpgradeChangedTerms').
	next := v1
	next.Version = "2.0.0"
	src2 := w.publish(t, next)
	require.NoError(t, w.sim.InjectFault(simulator.Fault{Scope: "supervisor-eu1", Kind: "SupervisorService", Op: "apply", Effect: simulator.EffectUnhealthy, Times: 1}))
	put := w.box.Do(t, http.MethodPut, "/v2/rollout-strategies", []byte(`{"strategies":[{"name":"canary-first","waves":[{"name":"canary","regions":["us-west-1"]},{"name":"rest","rest":true}]}]}`))
	require.Equal(t, http.StatusOK, put.Status, "%s", put.Body)
	b := newBrowser(t, w.box.URL)
	b.signIn(onebox.Token, "e2e", "admin")

	b.route("#/services/" + encodeID(id) + "/upgrade")
	b.waitSelector("#rollout-strategy option[value=canary-first]", time.Minute)
	require.Contains(t, b.text("#rollout-strategy"), "Default: all at once (no strategy set)")
	b.run(10*time.Second, chromedp.SetValue(chromedp.CSS("#rollout-strategy"), "canary-first"))
	b.typeInto("#upgrade-source", src2)
	b.click("#plan-source")
	b.waitSelector("#fleet-plan", time.Minute)
	require.Contains(t, b.text("#fleet-plan-h"), "canary-first, 2 Supervisors in 2 waves")
	require.Equal(t, []string{"1\tcanary\t1\t0\t0", "2\trest\t1\t0\t0"}, evalAs[[]string](b, "[...document.querySelectorAll('#plan-waves tbody tr')].map((r) => r.innerText)"), "a wave per line: Supervisors, blocked, window closed")
	b.click("#plan-targets summary")
	b.waitSelector("#plan-target-lines tr[data-supervisor=supervisor-eu1]", 10*time.Second)
	require.Contains(t, b.text("#plan-target-lines tr[data-supervisor=supervisor-eu1]"), "2 rest")
	b.click("#start-upgrade")
	b.click("#dlg-confirm")
	b.waitFor("the rollout page", 30*time.Second, "location.hash.endsWith('/rollout')")
	b.rolloutShows("RolledBack", 2*time.Minute)
	b.waitFor("every cell RolledBack", time.Minute, "[...document.querySelectorAll('#targets .cell')].every((c) => c.dataset.state === 'RolledBack')")
	require.Contains(t, b.text("#rollout-state + .alert"), "wave rest: 1 of 1 target(s) failed, more than its budget of 0")
	b.waitSelector("#quarantined tr[data-version='"+arcturusName+"@2.0.0']", time.Minute)
	require.Contains(t, b.text("#quarantined"), w.rollout(t, id).OperationID, "the quarantine names the rollout")
	require.Equal(t, "2", b.text("#legend li[data-state=RolledBack] strong"), "the legend counts them")
	b.screenshot("rollout-rolled-back")

	// A viewer sees the quarantine, not Clear.
	b.click("#sign-out")
	b.signIn(onebox.ViewerToken, "audit", "viewer")
	b.route("#/rollouts")
	b.waitSelector("#quarantined", time.Minute)
	require.Contains(t, b.text("#rollouts"), "RolledBack")
	require.False(t, evalAs[bool](b, "!!document.querySelector('#quarantined button')"), "clearing is an administrator's")
	b.click("#sign-out")

	b.signIn(onebox.Token, "e2e", "admin")
	b.route("#/rollouts")
	clear := "[id='clear-" + arcturusName + "-2.0.0']"
	b.click(clear)
	b.click("#dlg-confirm")
	b.waitSelector("#no-quarantine", time.Minute)
	versions := w.box.Do(t, http.MethodGet, "/v2/vcf-service-versions?name="+arcturusName, nil)
	require.NotContains(t, string(versions.Body), `"quarantine"`, "cleared on the server")
	b.checkConsole()
}

// fleet1000 is an all-in-one over 100 regions × 10 Supervisors with a
// service installed on all of them and a rollout that moved the first
// region and waits for approval of the other 990.
func fleet1000(t testing.TB) (*scaleWorld, string) {
	w := newScaleWorldWith(t, 100, 10, []onebox.Option{fastRollouts},
		scaleVersion("1.0.0", 1, 0, "a", "admin"), scaleVersion("2.0.0", 1, 0, "a", "operator"))
	id := w.create(t, w.sources[0])
	w.waitStatus(t, id, "Unresolved")
	w.activate(t, id)
	poll(t, "the service Healthy on 1,000 Supervisors", 5*time.Minute, func() svcView { return w.get(t, id) }, func(v svcView) bool { return v.Status == "Healthy" })
	patch(t, w.world, id, `{"source":"`+w.sources[1]+`","rollout":{"strategy":{"waves":[{"name":"canary","regions":["region-00"]},{"name":"rest","rest":true,"approval":true}]}}}`, http.StatusAccepted)
	poll(t, "the canary done", 5*time.Minute, func() rolloutView { return w.rollout(t, id) }, func(r rolloutView) bool { return r.State == "WaitingApproval" })
	return w, id
}

// gridPainted resolves, in the page, to the time since navigation when
// the grid holds n cells and a frame has been painted after it.
func gridPainted(n int) string {
	return fmt.Sprintf(`new Promise((resolve) => { const check = () => {
  if (document.querySelectorAll('#targets .cell').length === %d) requestAnimationFrame(() => setTimeout(() => resolve(performance.now())));
  else setTimeout(check, 5);
}; check(); })`, n)
}

// A rollout over 1,000 Supervisors: the grid holds one cell per target,
// grouped by wave, the legend counts them, the filter narrows them, and
// the page stays usable (the time to render is BenchmarkConsoleRolloutGrid1000's).
func TestConsoleRolloutGrid1000(t *testing.T) {
	w, id := fleet1000(t)
	b := newBrowser(t, w.box.URL)
	b.signIn(onebox.ViewerToken, "audit", "viewer")
	b.route("#/services/" + encodeID(id) + "/rollout")
	b.rolloutShows("WaitingApproval", time.Minute)
	b.waitFor("1,000 cells", time.Minute, "document.querySelectorAll('#targets .cell').length === 1000")
	require.Equal(t, []int{10, 990}, evalAs[[]int](b, "[...document.querySelectorAll('#targets .cells')].map((g) => g.children.length)"), "grouped by wave")
	require.Equal(t, "10", b.text("#legend li[data-state=Done] strong"))
	require.Equal(t, "990", b.text("#legend li[data-state=Pending] strong"))
	require.Equal(t, "Showing 1000 of 1000 targets.", b.text("#targets-shown"))
	require.Empty(t, evalAs[[]string](b, unlabelled))
	require.Equal(t, 1, evalAs[int](b, "document.querySelectorAll('#targets .cell[tabindex=\"0\"]').length"), "one tab stop, not a thousand")
	b.eval("document.querySelector('#targets-h').scrollIntoView()")
	b.screenshot("rollout-1000")

	b.run(10*time.Second, chromedp.SetValue(chromedp.CSS("#target-state"), "Done"))
	b.eval("document.querySelector('#target-state').dispatchEvent(new Event('change'))")
	require.Equal(t, "Showing 10 of 1000 targets.", b.text("#targets-shown"))
	b.run(10*time.Second, chromedp.SetValue(chromedp.CSS("#target-state"), ""))
	b.eval("document.querySelector('#target-state').dispatchEvent(new Event('change'))")
	b.typeInto("#target-filter", "region-42")
	require.Equal(t, "Showing 10 of 1000 targets.", b.text("#targets-shown"))
	require.Equal(t, 10, evalAs[int](b, "[...document.querySelectorAll('#targets .cell')].filter((c) => !c.hidden).length"))

	// Usable: the page answers a keystroke at once while it follows the
	// rollout (the cells are updated in place, not rebuilt).
	b.eval("document.querySelector('#targets .cell:not([hidden])').focus()")
	first := evalAs[string](b, "document.activeElement.dataset.sup")
	b.run(10*time.Second, chromedp.KeyEvent(kb.ArrowRight))
	require.NotEqual(t, first, evalAs[string](b, "document.activeElement.dataset.sup"))
	require.True(t, strings.HasPrefix(evalAs[string](b, "document.activeElement.dataset.sup"), "sv-"))

	// Readable on a narrow window: the cells wrap, nothing scrolls sideways.
	b.run(10*time.Second, chromedp.EmulateViewport(390, 844))
	require.True(t, evalAs[bool](b, "document.documentElement.scrollWidth <= window.innerWidth"), "the rollout page does not scroll sideways at 390 px")
	b.checkConsole()
}

// From navigation to a 1,000-target rollout's grid painted, in headless
// Chromium against the all-in-one on the simulator (ms-to-grid: the
// page's own clock, from the navigation's start to the first frame after
// the thousandth cell); ms-rollout-call is the GET …/rollout of the 1,000
// targets within it.
func BenchmarkConsoleRolloutGrid1000(b *testing.B) {
	w, id := fleet1000(b)
	settle(b)
	br := newBrowser(b, w.box.URL)
	br.signIn(onebox.Token, "e2e", "admin")
	var grids, calls []time.Duration
	b.ResetTimer()
	for i := range b.N {
		br.open(fmt.Sprintf("?run=%d#/services/%s/rollout", i, encodeID(id)))
		ctx, cancel := context.WithTimeout(br.ctx, time.Minute)
		at, err := chromedp.Run(ctx, chromedp.Evaluate[float64](gridPainted(1000), chromedp.EvalAwaitPromise))
		cancel()
		require.NoError(b, err)
		grids = append(grids, time.Duration(at*float64(time.Millisecond)))
		call := evalAs[float64](br, "performance.getEntriesByType('resource').find((e) => e.name.endsWith('/rollout')).duration")
		calls = append(calls, time.Duration(call*float64(time.Millisecond)))
	}
	b.StopTimer()
	b.ReportMetric(percentileMS(grids, 50), "ms-to-grid-p50")
	b.ReportMetric(percentileMS(grids, 99), "ms-to-grid-p99")
	b.ReportMetric(percentileMS(calls, 50), "ms-rollout-call-p50")
	br.checkConsole()
}
