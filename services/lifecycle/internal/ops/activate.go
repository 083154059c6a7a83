package ops

import (
	"context"
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// Activation: PATCH lifecycleState inactive -> active, once the EULA,
// signatures and access grants are accepted.

// The steps, in order: render the bundle with the stored values and the
// inventory, evaluate compatibility, run the dynamic pre-checks, apply the
// resources on their targets. Every step renders through the run's cache,
// so a restarted run renders once again.
var activateOp = operation{
	typ:   lifecycle.OpActivate,
	steps: installSteps,
	onFailure: func(svc *lifecycle.Service, _ *lifecycle.Operation, _ string) {
		// The activation did not happen: the service is inactive again.
		svc.LifecycleState = lifecycle.StateInactive
		svc.Status = lifecycle.StatusUnhealthy
	},
}

// installSteps install the service's current version as rendered now (an
// activation, and a reconfiguration of an active service).
var installSteps = []step{
	{"render", withRendered(func(context.Context, *Deps, *run, *bundle.Bundle, *steps.Rendered) error { return nil })},
	{"compatibility", withRendered(func(ctx context.Context, d *Deps, r *run, b *bundle.Bundle, rend *steps.Rendered) error {
		notes, err := steps.CheckInstall(ctx, d.Ports.Check(), d.Writer, r.svc, b, rend)
		r.note(notes)
		return err
	})},
	{"prechecks", withRendered(func(ctx context.Context, d *Deps, r *run, b *bundle.Bundle, rend *steps.Rendered) error {
		return steps.Prechecks(ctx, d.Ports.Precheck(), r.svc, b, rend, r.svc.Version)
	})},
	{"apply", withRendered(func(ctx context.Context, d *Deps, r *run, _ *bundle.Bundle, rend *steps.Rendered) error {
		return steps.ApplyRendered(ctx, d.Ports.Apply(), r.svc, rend, r.svc.Version)
	})},
}

// withRendered runs a step on the service's bundle rendered with its
// current values (once per run: the render is kept in the run's cache).
func withRendered(fn func(ctx context.Context, d *Deps, r *run, b *bundle.Bundle, rend *steps.Rendered) error) func(context.Context, *Deps, *run) error {
	return func(ctx context.Context, d *Deps, r *run) error {
		b, err := steps.LoadBundle(d.Bundles, r.svc)
		if err != nil {
			return err
		}
		rend, err := steps.RenderFor(ctx, d.Ports.Render(), d.Writer, r.cache(), r.svc, b)
		if err != nil {
			return err
		}
		return fn(ctx, d, r, b, rend)
	}
}

// startActivation records an activation on svc (inside the request's
// transaction).
func startActivation(d *Deps, svc *lifecycle.Service, wantGrants map[string]any, by string) (*lifecycle.Operation, error) {
	switch svc.Status {
	case lifecycle.StatusReady, lifecycle.StatusUnresolved, lifecycle.StatusUnhealthy:
		if svc.Digest == "" {
			return nil, fmt.Errorf("service %s cannot be activated: its bundle was not registered (status %s; see state.errorDetails): %w", svc.ID, svc.Status, lifecycle.ErrFailedPrecondition)
		}
	default:
		return nil, fmt.Errorf("service %s cannot be activated while %s: wait for status Ready: %w", svc.ID, svc.Status, lifecycle.ErrFailedPrecondition)
	}
	if err := acceptanceComplete(svc.Accepted, wantGrants); err != nil {
		return nil, fmt.Errorf("cannot activate %s: %w", svc.ID, err)
	}
	if err := checkSignatures(d, svc); err != nil {
		return nil, err
	}
	op := activateOp.start(d, svc, by, lifecycle.OperationParams{Phase: lifecycle.PhaseInstalling})
	op.ToVersion = svc.Version
	svc.LifecycleState = lifecycle.StateActive
	svc.Status = lifecycle.StatusBusy
	svc.Phase = lifecycle.PhaseInstalling
	svc.ErrorDetails = nil
	return op, nil
}
