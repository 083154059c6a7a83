package lifecycle

import (
	"context"
	"fmt"
)

// Reconfiguration: an active service's values changed, or a client asked
// for phase Configuring, Editing or Publishing, or for the new-supervisor
// event to be honoured: the current version is rendered and applied again.

// reconfigureSteps, in order: the same checks as an activation, then the
// resources are re-applied (new ones created, removed ones cleaned up).
var reconfigureSteps = []string{"render", "compatibility", "prechecks", "apply"}

var reconfigureOperation = operationDef{
	run: func(ctx context.Context, m *core, r *run, step string) error {
		return m.reconfigureStep(ctx, r, step)
	},
	onFailure: func(svc *Service, _ *Operation, _ string) {
		svc.Status = StatusUnhealthy
	},
}

// startReconfigure records a reconfiguration on svc (inside the request's
// transaction); phase is what the service shows meanwhile.
func (m *core) startReconfigure(svc *Service, phase, by string) *Operation {
	op := m.newOperation(svc, OpConfigure, by, OperationParams{Phase: phase}, reconfigureSteps...)
	op.FromVersion, op.ToVersion = svc.Version, svc.Version
	svc.Phase, svc.Status = phase, StatusBusy
	return op
}

// reconfigureStep runs one step of a reconfiguration.
func (m *core) reconfigureStep(ctx context.Context, r *run, name string) error {
	b, err := m.loadBundle(r.svc)
	if err != nil {
		return err
	}
	rend, err := m.renderFor(ctx, r, r.svc, b)
	if err != nil {
		return err
	}
	switch name {
	case "render":
		return nil
	case "compatibility":
		return m.checkInstall(ctx, r.svc, b, rend)
	case "prechecks":
		return m.prechecks(ctx, r.svc, b, rend, r.svc.Version)
	case "apply":
		return m.applyRendered(ctx, r.svc, rend, r.svc.Version)
	}
	return fmt.Errorf("configure has no step %q", name)
}
