package steps

import (
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// KindSignature is the kind of the result an upgrade plan shows when the
// target version fails the signature policy.
const KindSignature = "SIGNATURE"

// SignaturePolicy is the one signature policy of every path that makes a
// version live (ops/signatures.go applies it; an upgrade plan previews it):
// when trusted keys are configured (verify is set), the version's bundle
// must carry a signature of its own digest that one of them verifies. Its
// error names the service, the version and why no signature verified; it
// is nil when the policy holds or no keys are configured.
func SignaturePolicy(verify func(*bundle.Bundle) error, svc *lifecycle.Service, v string, b *bundle.Bundle) error {
	if verify == nil {
		return nil
	}
	if b == nil {
		return Unverifiable(svc, v, fmt.Errorf("its bundle is not available to verify"))
	}
	if err := verify(b); err != nil {
		return Unverifiable(svc, v, err)
	}
	return nil
}

// Unverifiable is the policy's error (without its gRPC class: the
// operations add FailedPrecondition).
func Unverifiable(svc *lifecycle.Service, v string, why error) error {
	name := svc.Name
	if name == "" {
		name = svc.ID
	}
	return fmt.Errorf("version %s of %s may not go live: no signature of its bundle verifies with a trusted key: %w", v, name, why)
}
