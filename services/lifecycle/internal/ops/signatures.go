package ops

import (
	"fmt"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// checkSignatures refuses to activate a service whose acceptance includes
// its signatures when trusted keys are configured and no signature of its
// bundle verifies; the error says why.
func checkSignatures(d *Deps, svc *lifecycle.Service) error {
	if d.VerifySignatures == nil || !svc.Accepted.Signatures {
		return nil
	}
	if svc.Digest == "" {
		return fmt.Errorf("cannot activate %s: its bundle is not available to verify its signatures: %w", svc.ID, lifecycle.ErrFailedPrecondition)
	}
	b, err := d.Bundles.Load(svc.Digest)
	if err != nil || b == nil {
		return fmt.Errorf("cannot activate %s: its bundle is not available to verify its signatures: %w", svc.ID, lifecycle.ErrFailedPrecondition)
	}
	if err := d.VerifySignatures(b); err != nil {
		return fmt.Errorf("cannot activate %s: accepted.signatures is true but no signature of the bundle verifies: %w: %w", svc.ID, err, lifecycle.ErrFailedPrecondition)
	}
	return nil
}
