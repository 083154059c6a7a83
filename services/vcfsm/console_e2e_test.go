package vcfsm_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/demodepot"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// demoHookHost is where the demo depot's 1.1.0 points its pre-check hook.
const demoHookHost = demodepot.HookService + ".svc-demo-vcfsm-dev.svc.cluster.local"

// consoleWorld is a running system with the demo depot's bundles in its
// registry and a real pre-check hook, and a browser on its console.
type consoleWorld struct {
	*world
	hook *hookServer
	b    *browser
}

func newConsoleWorld(t *testing.T, opts ...onebox.Option) *consoleWorld {
	t.Helper()
	hook := newHook(t)
	w := newWorld(t, append([]onebox.Option{func(c *app.Config) {
		c.Precheck.Resolve = []string{demoHookHost + "=" + hook.Listener.Addr().String()}
	}}, opts...)...)
	require.NoError(t, demodepot.PushAll(w.reg.Host))
	return &consoleWorld{world: w, hook: hook, b: newBrowser(t, w.box.URL)}
}

func (c *consoleWorld) demo(version string) string {
	return "oci://" + c.reg.Ref(demodepot.Repository+":"+version)
}

// The administrator's whole flow in a real browser, as upgrade.md tells
// it: sign in → create from the demo depot → activate (EULA, signatures,
// the exact grants) → plan an upgrade that the real hook blocks with an
// ERROR → plan and run one that passes with a WARNING → roll back →
// delete; the console stays free of errors and CSP violations throughout.
func TestConsoleUpgradeFlow(t *testing.T) {
	c := newConsoleWorld(t)
	b := c.b
	b.signIn(onebox.Token, "e2e", "admin")
	b.waitSelector("table#services", 30*time.Second)

	// Create, from the navigation.
	b.click("#nav a[href='#/create']")
	b.typeInto("#source", c.demo("1.1.0"))
	b.screenshot("create")
	b.click("#create")
	b.waitSelector("#activate-now", 2*time.Minute)
	id := evalAs[string](b, "decodeURIComponent(location.hash.split('/')[2])")
	require.True(t, strings.HasPrefix(id, "urn:vcloud:entity:broadcom:vcfService:"), id)

	// Activation shows exactly the grants REST renders, and sends them.
	grants := c.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/render-access-grants", map[string]any{})
	require.Equal(t, http.StatusOK, grants.Status)
	require.JSONEq(t, string(grants.Body), evalAs[string](b, "document.querySelector('#grants-json').textContent"), "the page shows the rendered grants verbatim")
	require.Contains(t, b.text("#eula-h"), "End-user license agreement")
	require.Contains(t, b.text("main"), "A demonstration VCF Service", "the package's own description")
	require.True(t, evalAs[bool](b, "document.querySelector('#activate-now').disabled"), "activation waits for all three acceptances")
	b.screenshot("activate")
	for _, box := range []string{"#accept-eula", "#accept-signatures", "#accept-grants"} {
		b.click(box)
	}
	b.waitFor("activation enabled", 5*time.Second, "!document.querySelector('#activate-now').disabled")
	b.click("#activate-now")
	b.waitFor("the service Healthy", 2*time.Minute, "(document.querySelector('#progress')||{dataset:{}}).dataset.status === 'Healthy' && !!document.querySelector('#upgrade')")

	// The service page: state per region and Supervisor, provenance,
	// grants, history, signatures.
	b.waitSelector("#provenance", 30*time.Second)
	b.waitFor("the resources on the page", 30*time.Second, "document.querySelectorAll('#state .place').length === 3")
	require.Contains(t, b.text("h1"), "Demo Service", "the package's display name")
	require.Contains(t, b.text("#state"), "Region us-west-1 · Supervisor supervisor-vc1")
	require.Contains(t, b.text("#state"), "Region eu-central-1 · Supervisor supervisor-eu1")
	var prov struct {
		Entries []struct{ Path, Layer string }
	}
	c.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/render-value-provenance", map[string]any{}).JSON(t, &prov)
	require.NotEmpty(t, prov.Entries)
	for _, e := range prov.Entries {
		require.Contains(t, b.text("#provenance"), e.Path+"\t"+e.Layer, "every value shows the layer that set it")
	}
	require.Contains(t, b.text("#history-table"), "activate")
	require.Contains(t, b.text("#signatures"), "Valid")
	b.screenshot("service")

	// An upgrade the hook blocks with an ERROR: the message is on the page.
	c.hook.answer(200, `{"results":[{"severity":"ERROR","message":"No backup of the demo data since the last change: take one first."}]}`)
	b.click("#upgrade")
	b.typeInto("#upgrade-source", c.demo("2.0.0"))
	b.click("#plan-source")
	b.waitSelector("#plan", time.Minute)
	require.Equal(t, "false", evalAs[string](b, "document.querySelector('#plan').dataset.allowed"))
	require.Contains(t, b.text("#blocking-reasons"), "No backup of the demo data since the last change")
	require.Contains(t, b.text("#hook-results tr[data-severity=ERROR]"), "✖ ERROR")
	require.Contains(t, b.text("#hook-results"), "No backup of the demo data since the last change")
	require.False(t, evalAs[bool](b, "!!document.querySelector('#start-upgrade')"), "a blocked plan offers no upgrade")
	b.screenshot("upgrade-blocked")

	// The hook now passes with a WARNING: shown, and the upgrade runs.
	c.hook.answer(200, `{"results":[{"severity":"WARNING","message":"Clients of the demo API reconnect once during the upgrade."}]}`)
	b.click("#plan-source")
	b.waitFor("the allowed plan", time.Minute, "(document.querySelector('#plan')||{dataset:{}}).dataset.allowed === 'true'")
	require.Contains(t, b.text("#hook-results tr[data-severity=WARNING]"), "⚠ WARNING")
	require.Contains(t, b.text("#hook-results"), "Clients of the demo API reconnect once during the upgrade.")
	require.Contains(t, b.text("#plan-resources"), "reconfigured", "2.0.0 changes the SupervisorServices")
	b.screenshot("upgrade-plan")
	b.click("#start-upgrade")
	b.click("#dlg-confirm")
	b.waitFor("the upgrade to 2.0.0", 3*time.Minute, "/Upgraded to 2\\.0\\.0/.test((document.querySelector('#operation')||{}).innerText||'')")
	require.Contains(t, b.text("#operation"), "Upgraded to 2.0.0. See the service")
	var svc struct{ Version, Status string }
	c.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).JSON(t, &svc)
	require.Equal(t, "2.0.0", svc.Version)
	require.Equal(t, "Healthy", svc.Status)

	// Roll back to 1.1.0 from the upgrade page, opened anew.
	b.route("#/services/" + encodeID(id))
	b.click("#upgrade")
	b.waitSelector("#rollback-version", 30*time.Second)
	require.Equal(t, "1.1.0", evalAs[string](b, "document.querySelector('#rollback-version').value"), "the last known good version is offered first")
	b.click("#rollback")
	b.click("#dlg-confirm")
	b.waitFor("the rollback to 1.1.0", 3*time.Minute, "/Rolled back to 1\\.1\\.0/.test((document.querySelector('#operation')||{}).innerText||'')")

	// Delete from the service page; Escape first cancels the dialog.
	b.route("#/services/" + encodeID(id))
	b.click("#delete")
	b.waitSelector("dialog[open]", 10*time.Second)
	b.run(10*time.Second, chromedp.KeyEvent(kb.Escape))
	b.waitFor("the dialog closed", 10*time.Second, "!document.querySelector('dialog')")
	require.Equal(t, http.StatusOK, c.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).Status, "Escape deletes nothing")
	b.click("#delete")
	b.click("#dlg-confirm")
	b.waitSelector("#deleted", 2*time.Minute)
	require.Equal(t, http.StatusNotFound, c.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).Status)
	b.checkConsole()
}

func encodeID(id string) string { return strings.ReplaceAll(id, ":", "%3A") }

// The buttons and fields a viewer may meet: they read, page, filter and
// plan (a plan changes nothing); none of them writes.
var viewerControls = map[string]bool{
	"filter": true, "sort": true, "order": true, "page-size": true, "apply": true, "refresh": true,
	"first-page": true, "prev-page": true, "next-page": true, "last-page": true, "goto-page": true, "goto": true,
	"sign-out": true, "upgrade-source": true, "plan-source": true, "rollout-strategy": true,
}

// controls lists the page's buttons, fields and button-links by id (or
// text, for one without an id).
const controls = `[...document.querySelectorAll('main button, main a.button, main input, main select, main textarea, header button')].map((e) => e.id || e.textContent.trim())`

// A viewer sees every page and no control that writes; an operator whose
// token loses the right to write while the tab is open gets the 403,
// shown plainly with the server's reason.
func TestConsoleRoles(t *testing.T) {
	// Watch streams idle this long are closed by the gateway: the pages
	// must reopen them to stay live.
	c := newConsoleWorld(t, func(c *app.Config) { c.Gateway.Limits.WatchIdleTimeout = time.Second })
	id := c.installed(t, c.publish(t, v1))
	b := c.b

	// A wrong token is refused with the server's reason.
	b.open("#/signin")
	b.expectConsole("status of 401")
	b.typeInto("#token", "not-a-token-of-this-system\r")
	b.waitFor("the refusal", 30*time.Second, "/401 Unauthorized/.test(document.querySelector('#notice').innerText)")
	require.Contains(t, b.text("#notice"), "missing or invalid bearer token")
	require.False(t, evalAs[bool](b, "!!sessionStorage.getItem('vcfsm.token')"), "nothing is kept")

	b.signIn(onebox.ViewerToken, "audit", "viewer")
	require.Equal(t, []string{"Services", "Rollouts", "Inventory"}, evalAs[[]string](b, "[...document.querySelectorAll('#nav a')].map((a) => a.textContent)"), "no Create for a viewer")
	pages := []struct{ route, ready string }{
		{"#/services", "table#services"},
		{"#/services/" + encodeID(id), "#provenance"},
		{"#/services/" + encodeID(id) + "/upgrade", "#upgrade-source"},
		{"#/inventory", "section.region"},
		{"#/create", "h1"},
	}
	for _, p := range pages {
		b.route(p.route)
		b.waitSelector(p.ready, time.Minute)
		for _, ctl := range evalAs[[]string](b, controls) {
			require.True(t, viewerControls[ctl], "page %s shows the viewer the control %q", p.route, ctl)
		}
	}
	require.Contains(t, b.text("main"), "may not create services")

	// The service page stays live after the gateway closed its idle watch.
	opened := evalAs[float64](b, "performance.now()")
	b.route("#/services/" + encodeID(id))
	b.waitSelector("#provenance", time.Minute)
	// A resource entry appears when a stream has ended.
	b.waitFor("a watch closed by the gateway", 30*time.Second,
		fmt.Sprintf("performance.getEntriesByType('resource').some((e) => e.name.endsWith('/watch') && e.startTime > %f)", opened))
	for _, state := range []string{"paused", "active"} {
		resp := c.box.Do(t, http.MethodPatch, "/v2/vcf-services/"+id, map[string]any{"lifecycleState": state})
		require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
		b.waitFor("the page showing "+state, time.Minute, fmt.Sprintf("(document.querySelector('#progress')||{dataset:{}}).dataset.lifecycle === %q", state))
	}
	b.route("#/inventory")
	b.waitSelector("section.region", time.Minute)
	require.Contains(t, b.text("main"), "2 regions, 2 Supervisors.")
	require.Contains(t, b.text("main"), "supervisor-vc1\tdomain-c8\t9.0.0.0\tv1.30.2+vmware.1", "each Supervisor with its versions")
	require.Contains(t, b.text("main"), "supervisor-eu1\tdomain-c20\t9.1.0.0\tv1.31.1+vmware.2")
	b.screenshot("inventory")
	// The versions it can move to, from the catalog; 2.0.0 only through
	// 1.5.0 (its source constraint), which the plan suggests.
	for _, v := range []arcturusVersion{
		ver("1.5.0", nil),
		ver("2.0.0", map[string]string{"appplatform.vmware.com/source-version-upgrade-constraints": ">=1.5.0"}),
	} {
		reg := c.box.Do(t, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": c.publish(t, v)})
		require.Equal(t, http.StatusOK, reg.Status, "%s", reg.Body)
	}
	b.route("#/services/" + encodeID(id) + "/upgrade")
	b.click("[id='plan-version-2.0.0']")
	b.waitFor("the plan to 2.0.0", time.Minute, "(document.querySelector('#plan')||{dataset:{}}).dataset.allowed === 'false'")
	require.Equal(t, "Suggested path: 1.0.0 → 1.5.0 → 2.0.0", b.text("#suggested-path"))
	require.Contains(t, b.text("#blocking-reasons"), ">=1.5.0")
	b.click("[id='plan-version-1.5.0']")
	b.waitFor("the plan to 1.5.0", time.Minute, "(document.querySelector('#plan')||{dataset:{}}).dataset.allowed === 'true'")
	require.Contains(t, b.text("#plan-h"), "1.0.0 → 1.5.0")
	require.False(t, evalAs[bool](b, "!!document.querySelector('#start-upgrade')"), "a viewer may plan but not upgrade")
	for _, ctl := range evalAs[[]string](b, controls) {
		require.True(t, viewerControls[ctl] || strings.HasPrefix(ctl, "plan-version-"), "the upgrade page shows the viewer the control %q", ctl)
	}
	b.click("#sign-out")

	b.signIn(onebox.OperatorToken, "ops", "operator")
	b.route("#/services/" + encodeID(id))
	b.waitSelector("#pause", time.Minute)
	// The provider lowers the token's role while the tab stays open (here:
	// the tab now holds a viewer's token); the server refuses, the page says why.
	b.eval("sessionStorage.setItem('vcfsm.token', " + jsString(onebox.ViewerToken) + ")")
	b.expectConsole("status of 403")
	b.click("#pause")
	b.click("#dlg-confirm")
	b.waitFor("the refusal", 30*time.Second, "/403 Forbidden/.test(document.querySelector('#notice').innerText)")
	require.Contains(t, b.text("#notice"), `permission services.write missing: principal "audit" has role viewer`)
	var svc struct{ LifecycleState string }
	c.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).JSON(t, &svc)
	require.Equal(t, "active", svc.LifecycleState, "nothing changed")
	b.checkConsole()
}

func jsString(s string) string {
	raw, _ := json.Marshal(s)
	return string(raw)
}
