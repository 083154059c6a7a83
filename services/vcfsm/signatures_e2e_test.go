package vcfsm_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// Cosign signatures of an OCI bundle are verified against --signature-keys:
// GET says who signed and whether it verified, isValid only when it did,
// and activating with accepted.signatures on an unverifiable bundle is
// refused with the reason.
func TestSignaturesVerified(t *testing.T) {
	keys := t.TempDir()
	vendor, vendorPEM := bundletest.NewSigningKey(t, keys, "broadcom")
	stranger, _ := bundletest.NewSigningKey(t, keys, "stranger")
	const repo = "arcturus-bundle"
	cases := []struct {
		name   string
		sign   func(w *world, digest string)
		valid  bool
		detail string
	}{
		{"good signature", func(w *world, d string) { bundletest.SignWithKey(t, w.reg, repo, d, d, vendor) },
			true, "verified, signed by broadcom"},
		{"wrong key", func(w *world, d string) { bundletest.SignWithKey(t, w.reg, repo, d, d, stranger) },
			false, "the signature does not verify with any of the configured keys"},
		{"tampered bundle", func(w *world, d string) {
			// A valid signature of another digest moved onto this bundle.
			other := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
			bundletest.SignWithKey(t, w.reg, repo, d, other, vendor)
		}, false, "is for sha256:0123456789abcdef"},
		{"missing signature", func(*world, string) {}, false, "no cosign signature is carried for the bundle's digest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, func(cfg *app.Config) { cfg.Lifecycle.SignatureKeys = vendorPEM })
			w.publish(t, v1)
			digest := bundletest.Digest(t, w.reg, w.reg.Ref(repo+":1.0.0"))
			c.sign(w, digest)
			id := w.create(t, w.reg.OCI(repo+":1.0.0"))
			w.waitStatus(t, id, "Unresolved")

			resp := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"?signatures=true", nil)
			require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
			var got struct {
				Signatures struct {
					IsValid bool `json:"isValid"`
					Details []struct{ Type, Digest, Message string }
				} `json:"signatures"`
			}
			resp.JSON(t, &got)
			require.Equal(t, c.valid, got.Signatures.IsValid)
			require.NotEmpty(t, got.Signatures.Details)
			require.Contains(t, got.Signatures.Details[0].Message, c.detail)

			if c.valid {
				w.activate(t, id)
				require.Equal(t, "Healthy", w.waitStatus(t, id, "Healthy", "Unhealthy").Status)
				return
			}
			inv := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/inventory", nil)
			grants := w.box.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/render-access-grants", []byte(`{"inventory": `+string(inv.Body)+`}`))
			require.Equal(t, http.StatusOK, grants.Status, "%s", grants.Body)
			refused := w.box.Do(t, http.MethodPatch, "/v2/vcf-services/"+id, []byte(`{"lifecycleState":"active","accepted":{"eula":true,"signatures":true,"accessGrants":`+string(grants.Body)+`}}`))
			require.NotEqual(t, http.StatusAccepted, refused.Status)
			require.Contains(t, string(refused.Body), signatureRefused)
			require.Contains(t, string(refused.Body), c.detail[:20])
		})
	}
}
