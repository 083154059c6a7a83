package ops

import (
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// The one signature policy of every path that makes a version live —
// activation, upgrade, automatic upgrade, each wave of a rollout, and
// rollback: when trusted keys are configured (--signature-keys), the
// version's bundle must carry a signature of its own digest that one of
// them verifies (steps.SignaturePolicy, which an upgrade plan previews).
// The error is the same on every path (it names the service, the version
// and why no signature verified) and it is a FailedPrecondition: no
// override lifts it (docs/decisions.md, "Overrides and acceptance").

// checkSignatures refuses to activate a service whose bundle does not
// verify.
func checkSignatures(d *Deps, svc *lifecycle.Service) error {
	if d.Ports.VerifySignatures == nil {
		return nil
	}
	if svc.Digest == "" {
		return unverifiable(svc, svc.Version, fmt.Errorf("its bundle is not available to verify"))
	}
	b, err := d.Bundles.Load(svc.Digest)
	if err != nil || b == nil {
		return unverifiable(svc, svc.Version, fmt.Errorf("its bundle is not available to verify"))
	}
	return verifyLive(d, svc, svc.Version, b)
}

// verifyLive applies the policy to the bundle b of svc's version v.
func verifyLive(d *Deps, svc *lifecycle.Service, v string, b *bundle.Bundle) error {
	if err := steps.SignaturePolicy(d.Ports.VerifySignatures, svc, v, b); err != nil {
		return fmt.Errorf("%w: %w", err, lifecycle.ErrFailedPrecondition)
	}
	return nil
}

// verifyDigest applies the policy to the stored bundle digest of svc's
// version v.
func verifyDigest(d *Deps, svc *lifecycle.Service, v, digest string) error {
	if d.Ports.VerifySignatures == nil {
		return nil
	}
	b, err := d.Bundles.Load(digest)
	if err != nil || b == nil {
		return unverifiable(svc, v, fmt.Errorf("its bundle is not available to verify"))
	}
	return verifyLive(d, svc, v, b)
}

// unverifiable is the policy's error.
func unverifiable(svc *lifecycle.Service, v string, why error) error {
	return fmt.Errorf("%w: %w", steps.Unverifiable(svc, v, why), lifecycle.ErrFailedPrecondition)
}
