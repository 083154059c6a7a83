package vcfsm_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// grantsDiffRows are the rows of the page's grants diff: the change and
// the row's cells.
const grantsDiffRows = `[...document.querySelectorAll('#grants-diff tbody tr')].map((r) => r.dataset.change + ' ' + r.innerText)`

// An upgrade to a version whose terms changed, driven from the upgrade
// page, directly and in waves with a strategy picked on the page: the
// plan shows what changed as REST's plan reports it (the grants added and
// removed and the new grants verbatim; a changed EULA); sent without the
// acceptance, the server's 409 and its reason are on the page and nothing
// moves; accepted on the page, the upgrade carries the acceptance and the
// service reaches the new version.
func TestConsoleUpgradeChangedTerms(t *testing.T) {
	w := newWorld(t, fastRollouts)
	id := w.installed(t, w.publish(t, v1))
	register := func(v arcturusVersion) string {
		src := w.publish(t, v)
		reg := w.box.Do(t, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": src})
		require.Equal(t, http.StatusOK, reg.Status, "%s", reg.Body)
		return src
	}
	plan := func(src string) acceptancePlan {
		resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/upgrade-plan", map[string]any{"source": src})
		require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
		var p acceptancePlan
		resp.JSON(t, &p)
		return p
	}
	p2 := plan(register(v2))
	require.Equal(t, []string{"accessGrants"}, p2.AcceptanceRequired, "2.0.0 changes the access grants")
	put := w.box.Do(t, http.MethodPut, "/v2/rollout-strategies", []byte(`{"strategies":[{"name":"canary-first","waves":[{"name":"canary","regions":["us-west-1"]},{"name":"rest","rest":true}]}]}`))
	require.Equal(t, http.StatusOK, put.Status, "%s", put.Body)
	b := newBrowser(t, w.box.URL)
	b.signIn(onebox.Token, "e2e", "admin")

	// A source the catalog does not hold is checked once downloaded: sent
	// without the acceptance, the upgrade fails and the page says why.
	b.route("#/services/" + encodeID(id) + "/upgrade")
	b.typeInto("#upgrade-source", w.publish(t, ver("1.5.0", nil)))
	b.click("#plan-source")
	b.waitSelector("#terms li[data-term=accessGrants]", time.Minute)
	b.confirmUpgrade(true)
	b.waitFor("the failed upgrade", time.Minute, "/upgrade Failed/.test((document.querySelector('#operation')||{}).innerText||'')")
	require.Contains(t, b.text("#operation"), "version 1.5.0 changes what was accepted, and the upgrade request does not accept it: its access grants changed")
	require.Equal(t, "1.0.0", w.waitStatus(t, id, "Healthy").Version, "nothing moved")

	// The plan shows what 2.0.0 changes, as REST's plan says it.
	b.route("#/services/" + encodeID(id))
	b.click("#upgrade")
	b.click("[id='plan-version-2.0.0']")
	b.waitSelector("#terms", time.Minute)
	require.Equal(t, "Changed terms to accept: the access grants", b.text("#terms-h"))
	require.Equal(t, "accessGrants", evalAs[string](b, "document.querySelector('#terms-h').dataset.required"), "the plan's acceptanceRequired")
	var want []string
	for _, g := range p2.AccessGrantsDiff.Added {
		want = append(want, fmt.Sprintf("added + added\t%s\t%s\t%s", g.Category, g.Key, g.Value))
	}
	for _, g := range p2.AccessGrantsDiff.Removed {
		want = append(want, fmt.Sprintf("removed − removed\t%s\t%s\t%s", g.Category, g.Key, g.Value))
	}
	require.Contains(t, want, "added + added\tVCF Automation\tRightBundle\tarcturusRightsBundle")
	require.Equal(t, want, evalAs[[]string](b, grantsDiffRows), "every grant added and removed")
	require.JSONEq(t, string(p2.AccessGrants), evalAs[string](b, "document.querySelector('#terms-grants-json').textContent"), "the new grants verbatim")
	require.JSONEq(t, v2Grants, string(p2.AccessGrants))

	// Not accepted: the server refuses, the page says why, nothing moves.
	refused := "version 2.0.0 changes what was accepted, and the upgrade request does not accept it: its access grants changed (added: VCF Automation RightBundle arcturusRightsBundle"
	b.upgradeRefused(refused)
	require.Equal(t, "1.0.0", w.get(t, id).Version, "nothing started")
	b.eval("document.querySelector('#terms').scrollIntoView()")
	b.screenshot("upgrade-terms")

	// Accepted on the page: the upgrade runs and the grants are on record.
	b.click("#accept-terms-grants")
	b.confirmUpgrade(false)
	b.waitFor("the upgrade to 2.0.0", 3*time.Minute, "/Upgraded to 2\\.0\\.0/.test((document.querySelector('#operation')||{}).innerText||'')")
	require.Empty(t, b.text("#notice"), "the refusal no longer shows")
	require.Empty(t, b.text("#terms-refusal"))
	var svc struct {
		Version  string
		Accepted struct {
			AccessGrants json.RawMessage `json:"accessGrants"`
		}
	}
	w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).JSON(t, &svc)
	require.Equal(t, "2.0.0", svc.Version)
	require.JSONEq(t, v2Grants, string(svc.Accepted.AccessGrants), "the grants accepted on the page are the service's")

	// In waves: 3.0.0 changes the EULA; the strategy is picked on the page.
	w.specPatch = func(s *bundletest.BundleSpec) { s.Files = map[string]string{"EULA.txt": "Arcturus EULA, 2027 edition"} }
	p3 := plan(register(ver("3.0.0", nil)))
	w.specPatch = nil
	require.Equal(t, []string{"eula"}, p3.AcceptanceRequired)
	b.route("#/services/" + encodeID(id))
	b.click("#upgrade")
	b.waitSelector("#rollout-strategy option[value=canary-first]", time.Minute)
	b.run(10*time.Second, chromedp.SetValue(chromedp.CSS("#rollout-strategy"), "canary-first"))
	b.click("[id='plan-version-3.0.0']")
	b.waitSelector("#fleet-plan", time.Minute)
	b.waitSelector("#terms li[data-term=eula]", 10*time.Second)
	require.Equal(t, "Changed terms to accept: the EULA", b.text("#terms-h"))
	require.Contains(t, b.text("#terms"), "The license terms (EULA) differ from the ones accepted.")
	require.False(t, evalAs[bool](b, "!!document.querySelector('#terms li[data-term=accessGrants]')"), "only what changed")
	b.upgradeRefused("version 3.0.0 changes what was accepted, and the upgrade request does not accept it: its EULA changed: accepted.eula must be true")
	require.Equal(t, "2.0.0", w.get(t, id).Version, "nothing started")
	require.Equal(t, http.StatusNotFound, w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/rollout", nil).Status, "no rollout started")
	b.click("#accept-terms-eula")
	b.confirmUpgrade(false)
	b.waitFor("the rollout page", 30*time.Second, "location.hash.endsWith('/rollout')")
	b.rolloutShows("Succeeded", 2*time.Minute)
	require.Equal(t, "3.0.0", w.waitStatus(t, id, "Healthy").Version)
	r := w.rollout(t, id)
	require.Len(t, r.Waves, 2, "in the strategy's two waves")
	require.Equal(t, "canary", r.Waves[0].Name)
	b.checkConsole()
}

// confirmUpgrade clicks the plan's upgrade button and confirms; the
// dialog warns when the changed terms are not all accepted.
func (b *browser) confirmUpgrade(unaccepted bool) {
	b.t.Helper()
	b.click("#start-upgrade")
	b.waitSelector("dialog[open]", 10*time.Second)
	warned := evalAs[bool](b, "/Changed terms not accepted/.test(document.querySelector('dialog').innerText)")
	require.Equal(b.t, unaccepted, warned, "the dialog warns exactly when changed terms are not accepted")
	b.click("#dlg-confirm")
}

// upgradeRefused upgrades without accepting the changed terms and waits
// for the server's 409 on the page: at its top and beside the terms.
func (b *browser) upgradeRefused(reason string) {
	b.t.Helper()
	b.expectConsole("status of 409")
	b.confirmUpgrade(true)
	b.waitFor("the refusal", 30*time.Second, "/409 Conflict/.test(document.querySelector('#notice').innerText)")
	require.Contains(b.t, b.text("#notice"), reason)
	require.Contains(b.t, b.text("#terms-refusal"), "Refused: 409 Conflict.")
	require.Contains(b.t, b.text("#terms-refusal"), reason)
	require.False(b.t, evalAs[bool](b, "!!document.querySelector('#operation h2')"), "no upgrade is followed")
}
