package vcfsm_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// acceptancePlan is the part of an upgrade plan acceptance reads.
type acceptancePlan struct {
	AcceptanceRequired []string        `json:"acceptanceRequired"`
	AccessGrants       json.RawMessage `json:"accessGrants"`
	AccessGrantsDiff   struct {
		Added, Removed []struct{ Category, Key, Value string }
	} `json:"accessGrantsDiff"`
}

// accepting is what a PATCH upgrading id to src adds to accept what the
// plan says the new version changes ("" when nothing).
func accepting(t testing.TB, w *world, id, src string) string {
	t.Helper()
	resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/upgrade-plan", map[string]any{"source": src})
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var p acceptancePlan
	resp.JSON(t, &p)
	if len(p.AcceptanceRequired) == 0 {
		return ""
	}
	return `,"accepted":{"eula":true,"signatures":true,"accessGrants":` + string(p.AccessGrants) + `}`
}

// An upgrade whose new version changes the EULA, the signature set or the
// access grants is refused unless the same request accepts them — 409
// within the request when the version is registered, the upgrade Failed
// before anything moves otherwise — and the plan says what to accept,
// with the grants' diff; an unchanged set needs nothing.
func TestUpgradeAcceptance(t *testing.T) {
	keys := t.TempDir()
	vendor, vendorPEM := bundletest.NewSigningKey(t, keys, "broadcom")
	rotated, rotatedPEM := bundletest.NewSigningKey(t, keys, "broadcom-2027")
	w := newWorld(t, func(c *app.Config) { c.Lifecycle.SignatureKeys = vendorPEM + "," + rotatedPEM })
	byVendor := func(w *world, d string) { bundletest.SignWithKey(t, w.reg, "arcturus-bundle", d, d, vendor) }
	byRotated := func(w *world, d string) { bundletest.SignWithKey(t, w.reg, "arcturus-bundle", d, d, rotated) }
	id := w.installed(t, w.publishOCI(t, sameTerms("1.0.0"), byVendor))

	plan := func(src string) acceptancePlan {
		resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/upgrade-plan", map[string]any{"source": src})
		require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
		var p acceptancePlan
		resp.JSON(t, &p)
		return p
	}
	accepting := func(src string, grants []byte) string {
		return `{"source":"` + src + `","accepted":{"eula":true,"signatures":true,"accessGrants":` + string(grants) + `}}`
	}
	refusedAsync := func(src, version, why string) {
		t.Helper()
		patch(t, w, id, `{"source":"`+src+`"}`, http.StatusAccepted)
		require.Equal(t, "Failed", w.waitOp(t, id, "upgrade", version).Outcome)
		requireStillAt(t, w, id, w.get(t, id).Version, why)
	}
	upgraded := func(body, version string) {
		t.Helper()
		patch(t, w, id, body, http.StatusAccepted)
		require.Equal(t, "Succeeded", w.waitOp(t, id, "upgrade", version).Outcome)
		require.Equal(t, version, w.waitStatus(t, id, "Healthy").Version)
	}

	t.Run("unchanged needs nothing", func(t *testing.T) {
		src := w.publishOCI(t, sameTerms("1.1.0"), byVendor)
		require.Empty(t, plan(src).AcceptanceRequired)
		upgraded(`{"source":"`+src+`"}`, "1.1.0")
	})
	t.Run("EULA", func(t *testing.T) {
		w.specPatch = func(s *bundletest.BundleSpec) { s.Files = map[string]string{"EULA.txt": "Arcturus EULA, 2027 edition"} }
		src := w.publishOCI(t, sameTerms("1.2.0"), byVendor)
		require.Equal(t, []string{"eula"}, plan(src).AcceptanceRequired)
		refusedAsync(src, "1.2.0", "its EULA changed: accepted.eula must be true")
		upgraded(accepting(src, w.grants(t, id)), "1.2.0")
	})
	t.Run("signature set", func(t *testing.T) {
		src := w.publishOCI(t, sameTerms("1.3.0"), byRotated)
		require.Equal(t, []string{"signatures"}, plan(src).AcceptanceRequired)
		reg := w.box.Do(t, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": src})
		require.Equal(t, http.StatusOK, reg.Status, "%s", reg.Body)
		refused := patch(t, w, id, `{"source":"`+src+`"}`, http.StatusConflict)
		require.Contains(t, string(refused.Body), "its signature set changed: accepted.signatures must be true")
		require.NotContains(t, string(refused.Body), "concurrent change", "a refusal of terms is not a race")
		require.Equal(t, "1.2.0", w.get(t, id).Version, "nothing started")
		upgraded(accepting(src, w.grants(t, id)), "1.3.0")
	})
	t.Run("access grants", func(t *testing.T) {
		grown := sameTerms("1.4.0")
		grown.RightBundle = true
		src := w.publishOCI(t, grown, byRotated)
		p := plan(src)
		require.Equal(t, []string{"accessGrants"}, p.AcceptanceRequired)
		require.Len(t, p.AccessGrantsDiff.Added, 1, "%+v", p.AccessGrantsDiff)
		require.Equal(t, "RightBundle", p.AccessGrantsDiff.Added[0].Key)
		require.Equal(t, "arcturusRightsBundle", p.AccessGrantsDiff.Added[0].Value)
		require.Empty(t, p.AccessGrantsDiff.Removed)
		refusedAsync(src, "1.4.0", "its access grants changed (added: VCF Automation RightBundle arcturusRightsBundle; removed: none)")
		// Accepting the old grants is not accepting the new ones.
		refusedAsync2 := patch(t, w, id, accepting(src, w.grants(t, id)), http.StatusAccepted)
		require.NotEmpty(t, refusedAsync2.Body)
		require.Equal(t, "Failed", w.waitOp(t, id, "upgrade", "1.4.0").Outcome)
		upgraded(accepting(src, p.AccessGrants), "1.4.0")
		var svc struct {
			Accepted struct {
				AccessGrants json.RawMessage `json:"accessGrants"`
			} `json:"accepted"`
		}
		w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id, nil).JSON(t, &svc)
		require.JSONEq(t, string(p.AccessGrants), string(svc.Accepted.AccessGrants), "what was accepted is on record")
	})
}
