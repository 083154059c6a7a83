package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// acceptanceComplete says what is missing for activation.
func acceptanceComplete(a lifecycle.Accepted, want map[string]any) error {
	var missing []string
	if !a.EULA {
		missing = append(missing, "accepted.eula must be true")
	}
	if !a.Signatures {
		missing = append(missing, "accepted.signatures must be true")
	}
	if !steps.SameJSON(a.AccessGrants, want) {
		got, _ := steps.CanonicalJSON(a.AccessGrants)
		exp, _ := steps.CanonicalJSON(want)
		missing = append(missing, fmt.Sprintf("accepted.accessGrants must equal POST /render-access-grants output verbatim: expected %s, got %s", exp, got))
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: %w", strings.Join(missing, "; "), lifecycle.ErrFailedPrecondition)
	}
	return nil
}

// upgradeAcceptance is what an upgrade of svc to version v (bundle nb)
// must accept: nothing unless the new version's EULA, signature set or
// access grants differ from what was accepted. An inactive service's
// acceptance is asked when it is activated.
func upgradeAcceptance(ctx context.Context, d *Deps, svc *lifecycle.Service, v string, nb *bundle.Bundle) (steps.Acceptance, error) {
	if svc.LifecycleState == lifecycle.StateInactive {
		return steps.Acceptance{}, nil
	}
	ob, err := steps.LoadBundle(d.Bundles, svc)
	if err != nil {
		return steps.Acceptance{}, err
	}
	old := steps.Terms{EULA: steps.EULAOf(ob)}
	if d.Ports.Signers != nil {
		old.Signers = d.Ports.Signers(ob)
	}
	probe := svc.Clone()
	probe.Version, probe.Digest = v, nb.Digest
	next, err := steps.TermsOf(ctx, d.Ports.Render(), d.Ports.Signers, probe, nb)
	if err != nil {
		return steps.Acceptance{}, err
	}
	return steps.CompareTerms(old, svc.Accepted, next), nil
}

// checkUpgradeAcceptance refuses the upgrade's new version when its
// request did not accept what changed; the acceptance it made is kept on
// the operation (the grants as rendered) and becomes the service's when
// the upgrade succeeds.
func checkUpgradeAcceptance(ctx context.Context, d *Deps, r *run, v string, nb *bundle.Bundle) error {
	a, err := upgradeAcceptance(ctx, d, r.svc, v, nb)
	if err != nil {
		return err
	}
	if err := a.Check(v, r.op.Accepted); err != nil {
		return lifecycle.Blocked(lifecycle.ErrTypeInstall, err)
	}
	if len(a.Required) > 0 {
		r.op.Accepted = &lifecycle.Accepted{EULA: true, Signatures: true, AccessGrants: lifecycle.CloneJSON(a.Grants)}
	} else {
		r.op.Accepted = nil
	}
	return nil
}

// refuseUnaccepted refuses, within the request (409), an upgrade to a
// version the catalog already holds when its request does not accept what
// the version changes; other sources are checked once downloaded.
func (r *Runner) refuseUnaccepted(ctx context.Context, svc *lifecycle.Service, source string, got *lifecycle.Accepted) error {
	if svc.Name == "" || svc.Digest == "" {
		return nil
	}
	entries, err := r.d.Repo.Catalog(ctx, svc.Name)
	if err != nil {
		return fmt.Errorf("read the catalog of %s: %w", svc.Name, err)
	}
	for _, e := range entries {
		if e.Source != source || e.Digest == "" {
			continue
		}
		nb, err := r.d.Bundles.Load(e.Digest)
		if err != nil {
			return nil // not stored here: the download step checks
		}
		a, err := upgradeAcceptance(ctx, &r.d, svc, e.Version, nb)
		if err != nil {
			return err
		}
		return a.Check(e.Version, got)
	}
	return nil
}

// acceptOnSuccess makes the acceptance an upgrade carried the service's.
func acceptOnSuccess(s *lifecycle.Service, op *lifecycle.Operation) {
	if op.Accepted != nil {
		s.Accepted = lifecycle.Accepted{EULA: op.Accepted.EULA, Signatures: op.Accepted.Signatures, AccessGrants: lifecycle.CloneJSON(op.Accepted.AccessGrants)}
	}
}
