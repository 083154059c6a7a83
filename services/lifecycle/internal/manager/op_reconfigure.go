package manager

import (
	"context"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
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
	onFailure: func(svc *lifecycle.Service, _ *lifecycle.Operation, _ string) {
		svc.Status = lifecycle.StatusUnhealthy
	},
}

// startReconfigure records a reconfiguration on svc (inside the request's
// transaction); phase is what the service shows meanwhile.
func (m *core) startReconfigure(svc *lifecycle.Service, phase, by string) *lifecycle.Operation {
	op := m.newOperation(svc, lifecycle.OpConfigure, by, lifecycle.OperationParams{Phase: phase}, reconfigureSteps...)
	op.FromVersion, op.ToVersion = svc.Version, svc.Version
	svc.Phase, svc.Status = phase, lifecycle.StatusBusy
	return op
}

// reconfigureStep runs one step of a reconfiguration: render,
// compatibility, pre-checks and apply, exactly as an activation does.
func (m *core) reconfigureStep(ctx context.Context, r *run, name string) error {
	return m.activateStep(ctx, r, name)
}
