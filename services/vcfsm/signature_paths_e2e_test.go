package vcfsm_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// signatureRefused is the one error every path that makes a version live
// answers when the version's bundle carries no signature a trusted key
// verifies.
const signatureRefused = "no signature of its bundle verifies with a trusted key"

// sameTerms is v1 at another version: the same EULA, signature set and
// access grants, so an upgrade to it needs no acceptance.
func sameTerms(version string) arcturusVersion {
	v := v1
	v.Version = version
	return v
}

// publishOCI publishes v and, with sign, signs its bundle's digest; it
// returns the OCI source (signatures travel with OCI sources).
func (w *world) publishOCI(t testing.TB, v arcturusVersion, sign func(w *world, digest string)) string {
	t.Helper()
	w.publish(t, v)
	ref := "arcturus-bundle:" + v.Version
	if sign != nil {
		sign(w, bundletest.Digest(t, w.reg, w.reg.Ref(ref)))
	}
	return w.reg.OCI(ref)
}

// opView is one operation of the history as these tests read it.
type opView struct {
	ID, Type, Outcome, ToVersion, FromVersion, RequestedBy string
	Override                                               *struct {
		Principal, Reason string
		Results           []struct{ Severity, Message, Source string }
	} `json:"override"`
	Steps []struct{ Name, Status, Message string }
}

// ops reads the service's history.
func (w *world) ops(t testing.TB, id string) []opView {
	t.Helper()
	resp := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var h struct {
		Operations []opView `json:"operations"`
	}
	resp.JSON(t, &h)
	return h.Operations
}

// waitOp waits until the service's latest operation of type typ is the
// one to version to, and has ended.
func (w *world) waitOp(t testing.TB, id, typ, to string) opView {
	t.Helper()
	var found opView
	poll(t, fmt.Sprintf("the %s to %s to end", typ, to), 90*time.Second, func() bool {
		ops := w.ops(t, id)
		for i := len(ops) - 1; i >= 0; i-- {
			if op := ops[i]; op.Type == typ {
				found = op
				return op.ToVersion == to && op.Outcome != "" && op.Outcome != "Running"
			}
		}
		return false
	}, func(ok bool) bool { return ok })
	return found
}

// requireStillAt checks a refused version changed nothing: the service
// runs the version it ran, Healthy, and says why in errorDetails.
func requireStillAt(t *testing.T, w *world, id, version, why string) {
	t.Helper()
	v := w.waitStatus(t, id, "Healthy", "Unhealthy")
	require.Equal(t, version, v.Version)
	require.Equal(t, "Healthy", v.Status)
	var msgs []string
	for _, d := range v.State.ErrorDetails {
		msgs = append(msgs, d.Severity+" "+d.Message)
	}
	require.Contains(t, fmt.Sprint(msgs), why)
}

// keysWorld has keys trusted: "broadcom" signs the vendor's versions,
// "stranger" is a key nobody trusts.
// unverifiableVersion is a version the signature policy refuses: how it
// is signed (nil: not at all) and what the refusal says.
type unverifiableVersion struct {
	version string
	sign    func(w *world, digest string)
	why     string
}

// unverifiable is an unsigned 2.0.0 and a 3.0.0 signed by an untrusted key.
func (k *keysWorld) unverifiable() []unverifiableVersion {
	return []unverifiableVersion{
		{"2.0.0", nil, "carries no cosign signature"},
		{"3.0.0", k.stranger, "does not verify with any of the configured keys"},
	}
}

type keysWorld struct {
	*world
	vendor, stranger func(w *world, digest string)
	vendorPEM        string
}

func newKeysWorld(t *testing.T, opts ...onebox.Option) *keysWorld {
	dir := t.TempDir()
	vendor, vendorPEM := bundletest.NewSigningKey(t, dir, "broadcom")
	stranger, _ := bundletest.NewSigningKey(t, t.TempDir(), "stranger")
	k := &keysWorld{vendorPEM: vendorPEM,
		vendor:   func(w *world, d string) { bundletest.SignWithKey(t, w.reg, "arcturus-bundle", d, d, vendor) },
		stranger: func(w *world, d string) { bundletest.SignWithKey(t, w.reg, "arcturus-bundle", d, d, stranger) },
	}
	k.world = newWorld(t, append([]onebox.Option{func(c *app.Config) { c.Lifecycle.SignatureKeys = vendorPEM }}, opts...)...)
	return k
}

// Every path that makes a version live verifies its signatures, with the
// same policy and the same error as activation: an upgrade, a rollout in
// waves and an automatic upgrade to an unsigned version, and to one signed
// by a key nobody trusts, end Failed before anything moves; the service
// stays Healthy on the version it ran, errorDetails saying why.
func TestSignaturesVerifiedOnUpgradePaths(t *testing.T) {
	paths := []struct {
		name string
		typ  string
		// start asks for the move to source (version to).
		start func(t *testing.T, k *keysWorld, id, source, to string)
	}{
		{"upgrade", "upgrade", func(t *testing.T, k *keysWorld, id, source, _ string) {
			patch(t, k.world, id, `{"source":"`+source+`"}`, http.StatusAccepted)
		}},
		{"rollout waves", "rollout", func(t *testing.T, k *keysWorld, id, source, _ string) {
			patch(t, k.world, id, `{"source":"`+source+`","rollout":{"strategy":`+fmt.Sprintf(canaryThenRest, "")+`}}`, http.StatusAccepted)
		}},
		{"automatic upgrade", "upgrade", func(t *testing.T, k *keysWorld, id, source, _ string) {
			reg := k.box.Do(t, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": source})
			require.Equal(t, http.StatusOK, reg.Status, "%s", reg.Body)
			patch(t, k.world, id, `{"autoUpgrade":true}`, http.StatusAccepted)
		}},
	}
	for _, p := range paths {
		t.Run(p.name, func(t *testing.T) {
			k := newKeysWorld(t, fastRollouts)
			id := k.installed(t, k.publishOCI(t, sameTerms("1.0.0"), k.vendor))
			for _, bad := range k.unverifiable() {
				src := k.publishOCI(t, sameTerms(bad.version), bad.sign)
				p.start(t, k, id, src, bad.version)
				op := k.waitOp(t, id, p.typ, bad.version)
				require.Equal(t, "Failed", op.Outcome, "%s to an unverifiable %s: %+v", p.name, bad.version, op)
				require.Equal(t, "download", op.Steps[0].Name)
				require.Equal(t, "Failed", op.Steps[0].Status, "refused before anything moved: %+v", op.Steps)
				require.Contains(t, op.Steps[0].Message, signatureRefused)
				require.Contains(t, op.Steps[0].Message, bad.why)
				v := k.waitStatus(t, id, "Healthy", "Unhealthy")
				require.Equal(t, []string{"1.0.0", "Healthy"}, []string{v.Version, v.Status})
				if p.name != "automatic upgrade" { // which retries the version after a while, starting afresh
					requireStillAt(t, k.world, id, "1.0.0", signatureRefused)
				}
			}
			// A version the vendor signed still goes through the same path.
			src := k.publishOCI(t, sameTerms("4.0.0"), k.vendor)
			p.start(t, k, id, src, "4.0.0")
			require.Equal(t, "Succeeded", k.waitOp(t, id, p.typ, "4.0.0").Outcome)
		})
	}
}

// restartWithKeys stops the world's system and starts it again on its
// data directory dir, trusting keys.
func (w *world) restartWithKeys(t *testing.T, dir, keys string, opts ...onebox.Option) {
	t.Helper()
	require.NoError(t, w.box.Stop())
	inv := filepath.Join(t.TempDir(), "inventory.yaml")
	require.NoError(t, os.WriteFile(inv, []byte(inventoryYAML), 0o600))
	w.box = onebox.Start(t, append([]onebox.Option{func(cfg *app.Config) {
		cfg.Lifecycle.SourceRootCAs = w.tars.RootCAs()
		cfg.Lifecycle.InventoryFile = inv
		cfg.Lifecycle.ReconcileInterval = 50 * time.Millisecond
		cfg.Lifecycle.DataDir = dir
		cfg.Lifecycle.SignatureKeys = keys
	}}, opts...)...)
	w.sim = w.box.Sys.Lifecycle().Simulator()
}

// Each wave of a rollout makes the new version live on its targets: a
// wave that would move to a version no trusted key verifies any more (its
// key was retired while the rollout waited for approval) is refused with
// the same error, and the rollout rolls back the waves it moved.
func TestSignaturesVerifiedOnEachWave(t *testing.T) {
	keys := t.TempDir()
	vendor, vendorPEM := bundletest.NewSigningKey(t, keys, "broadcom")
	retired, retiredPEM := bundletest.NewSigningKey(t, keys, "retired")
	dir := t.TempDir()
	w := newWorld(t, fastRollouts, func(cfg *app.Config) {
		cfg.Lifecycle.DataDir = dir
		cfg.Lifecycle.SignatureKeys = vendorPEM + "," + retiredPEM
	})
	id := w.installed(t, w.publishOCI(t, sameTerms("1.0.0"), func(w *world, d string) { bundletest.SignWithKey(t, w.reg, "arcturus-bundle", d, d, vendor) }))
	src := w.publishOCI(t, sameTerms("2.0.0"), func(w *world, d string) { bundletest.SignWithKey(t, w.reg, "arcturus-bundle", d, d, retired) })
	patch(t, w, id, `{"source":"`+src+`","accepted":{"eula":true,"signatures":true,"accessGrants":`+string(w.grants(t, id))+`},`+
		`"rollout":{"strategy":`+fmt.Sprintf(canaryThenRest, `,"approval":true`)+`}}`, http.StatusAccepted)
	waitRollout(t, w, id, "WaitingApproval")
	require.Equal(t, map[string]string{"supervisor-vc1": "2.0.0", "supervisor-eu1": "1.0.0"}, w.ssOwners(t, id), "the canary moved")

	w.restartWithKeys(t, dir, vendorPEM, fastRollouts)
	ok := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollout/approve", map[string]any{})
	require.Equal(t, http.StatusOK, ok.Status, "%s", ok.Body)
	r := waitRollout(t, w, id, "RolledBack")
	require.Contains(t, r.Reason, signatureRefused)
	require.Contains(t, r.Reason, "does not verify with any of the configured keys")
	require.Equal(t, "1.0.0", w.waitStatus(t, id, "Healthy").Version)
	require.Equal(t, map[string]string{"supervisor-vc1": "1.0.0", "supervisor-eu1": "1.0.0"}, w.ssOwners(t, id), "the canary came back")
}

// A rollback makes the previous version live again: it is refused, with
// the same error, when that version no longer verifies (its key is no
// longer trusted, or it was installed before keys were configured).
func TestSignaturesVerifiedOnRollback(t *testing.T) {
	keys := t.TempDir()
	vendor, vendorPEM := bundletest.NewSigningKey(t, keys, "broadcom")
	retired, retiredPEM := bundletest.NewSigningKey(t, keys, "retired")
	sign := func(s func(*world, string)) func(*world, string) { return s }
	byVendor := sign(func(w *world, d string) { bundletest.SignWithKey(t, w.reg, "arcturus-bundle", d, d, vendor) })
	byRetired := sign(func(w *world, d string) { bundletest.SignWithKey(t, w.reg, "arcturus-bundle", d, d, retired) })
	cases := []struct {
		name      string
		firstKeys string
		signV1    func(*world, string)
		why       string
	}{
		{"unsigned", "", nil, "carries no cosign signature"},
		{"signed by a key no longer trusted", vendorPEM + "," + retiredPEM, byRetired, "does not verify with any of the configured keys"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			keep := func(cfg *app.Config) { cfg.Lifecycle.DataDir = dir; cfg.Lifecycle.SignatureKeys = c.firstKeys }
			w := newWorld(t, keep)
			id := w.installed(t, w.publishOCI(t, sameTerms("1.0.0"), c.signV1))
			// The signature set changes (signed by another key): the
			// upgrade accepts it.
			patch(t, w, id, `{"source":"`+w.publishOCI(t, sameTerms("2.0.0"), byVendor)+`","accepted":{"eula":true,"signatures":true,"accessGrants":`+string(w.grants(t, id))+`}}`, http.StatusAccepted)
			require.Equal(t, "Succeeded", w.waitOp(t, id, "upgrade", "2.0.0").Outcome)
			w.waitStatus(t, id, "Healthy")

			w.restartWithKeys(t, dir, vendorPEM)
			resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{})
			require.Equal(t, http.StatusBadRequest, resp.Status, "%s", resp.Body)
			require.Contains(t, string(resp.Body), signatureRefused)
			require.Contains(t, string(resp.Body), c.why)
			v := w.get(t, id)
			require.Equal(t, "2.0.0", v.Version)
		})
	}
}
