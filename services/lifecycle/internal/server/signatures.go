package server

import (
	"fmt"
	"time"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/signature"
)

// TrustSignatures makes GET verify bundle signatures against v's keys.
func (h *Handler) TrustSignatures(v *signature.Verifier) { h.sigs = v }

// signaturesView is GET's signatures: isValid only when a signature of the
// bundle's own digest verified with a trusted key; the details say who
// signed each payload, or why it did not verify.
func signaturesView(sigs *signature.Verifier, svc *lifecycle.Service, b *bundle.Bundle, details bool) *lifecyclev1.Signatures {
	results := sigs.Verify(b)
	out := &lifecyclev1.Signatures{ValidationTime: rfc3339(svc.UpdatedAt)}
	if sigs.Configured() {
		out.ValidationTime = time.Now().UTC().Format(time.RFC3339)
	}
	for _, r := range results {
		out.IsValid = out.IsValid || r.Verified
		if !details {
			continue
		}
		msg := fmt.Sprintf("cosign signature %s: verified, signed by %s", r.Tag, r.Signer)
		if !r.Verified {
			msg = fmt.Sprintf("cosign signature %s: not verified: %s", r.Tag, r.Reason)
		}
		out.Details = append(out.Details, &lifecyclev1.SignatureDetail{Type: "cosign", Digest: r.Digest, Message: msg})
	}
	if details && len(results) == 0 {
		out.Details = append(out.Details, &lifecyclev1.SignatureDetail{Type: "cosign", Digest: b.Digest, Message: "no cosign signature is carried for the bundle's digest"})
	}
	return out
}
