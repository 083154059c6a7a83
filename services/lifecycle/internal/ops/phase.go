package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// PATCH phase: each of api.md's eight phase values asks for the work that
// phase names (docs/decisions.md, "Lifecycle semantics: details"):
//
//	Configuring, Editing, Publishing  re-apply an active service's configuration (the configure operation, shown with that phase)
//	Installing                        inactive: activate (as lifecycleState active, acceptance required); active: re-apply, as above
//	Resolving                         inactive: re-resolve acceptance against a fresh render (Ready or Unresolved); active: re-apply
//	Upgrading                         upgrade to the newest registered version the service may move to (as PATCH source;
//	                                  steps.UpgradeCandidates: not quarantined, a pre-release only when the service opts in)
//	Uninstalling                      deactivate (as lifecycleState inactive)
//	Deleting                          delete (as DELETE without forceDelete)
//
// A phase that re-applies refuses a service that is not active (400, naming
// its state); one that names a lifecycle state refuses a different
// lifecycleState in the same request.

// validPhase refuses a value that is not one of api.md's phases.
func validPhase(p string) error {
	if !slices.Contains(lifecycle.Phases, p) {
		return fmt.Errorf("phase %q: want one of %s: %w", p, strings.Join(lifecycle.Phases, ", "), lifecycle.ErrInvalidArgument)
	}
	return nil
}

// phaseDelete reports a PATCH phase Deleting (which runs as DELETE).
func (c *Change) phaseDelete() bool {
	return c.Phase != nil && *c.Phase == lifecycle.PhaseDeleting
}

// expandPhase turns a requested phase into the change it stands for (a
// lifecycle state, a source), or leaves it for applyChange to re-apply
// the configuration with. resolve is set for Resolving on a service that
// is not active.
func (r *Runner) expandPhase(ctx context.Context, svc *lifecycle.Service, c *Change) (resolve bool, err error) {
	if c.Phase == nil || *c.Phase == "" {
		return false, nil
	}
	p := *c.Phase
	state := func(want string) error {
		if c.LifecycleState != nil && *c.LifecycleState != want {
			return fmt.Errorf("phase %s asks for lifecycleState %s; the request also asks for %s: send one: %w", p, want, *c.LifecycleState, lifecycle.ErrInvalidArgument)
		}
		c.LifecycleState, c.Phase = &want, nil
		return nil
	}
	switch {
	case p == lifecycle.PhaseUninstalling:
		return false, state(lifecycle.StateInactive)
	case p == lifecycle.PhaseInstalling && svc.LifecycleState == lifecycle.StateInactive:
		return false, state(lifecycle.StateActive)
	case p == lifecycle.PhaseResolving && svc.LifecycleState == lifecycle.StateInactive:
		c.Phase = nil
		return true, nil
	case p == lifecycle.PhaseUpgrading:
		if c.Source != nil && *c.Source != "" {
			return false, fmt.Errorf("phase Upgrading picks the newest registered version; the request also names a source: send one: %w", lifecycle.ErrInvalidArgument)
		}
		entries, err := r.d.Repo.Catalog(ctx, svc.Name)
		if err != nil {
			return false, fmt.Errorf("read the catalog of %s: %w", svc.Name, err)
		}
		next := steps.UpgradeCandidates(entries, svc)
		if len(next) == 0 {
			return false, fmt.Errorf("phase Upgrading: no registered version of %s newer than %s may be upgraded to (register one with POST /v2/vcf-service-versions, or PATCH source): %w",
				svc.Name, svc.Version, lifecycle.ErrFailedPrecondition)
		}
		c.Source, c.Phase = &next[0].Source, nil
		return false, nil
	}
	if svc.LifecycleState != lifecycle.StateActive {
		return false, fmt.Errorf("phase %s re-applies an active service's configuration; service %s is %s: %w", p, svc.ID, svc.LifecycleState, lifecycle.ErrFailedPrecondition)
	}
	return false, nil
}

// resolveAcceptance is Resolving on a service that is not active: its
// status says again whether what it accepted matches a fresh render.
func resolveAcceptance(svc *lifecycle.Service, wantGrants map[string]any) {
	if svc.Status != lifecycle.StatusUnresolved && svc.Status != lifecycle.StatusReady {
		return
	}
	svc.Status = lifecycle.StatusUnresolved
	if acceptanceComplete(svc.Accepted, wantGrants) == nil {
		svc.Status = lifecycle.StatusReady
	}
}
