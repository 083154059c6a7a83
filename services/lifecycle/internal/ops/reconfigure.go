package ops

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Reconfiguration: an active service's values changed, or a client asked
// for phase Configuring, Editing or Publishing, or for the new-supervisor
// event to be honoured: the current version is rendered and applied again.

// The same steps as an activation: the resources are re-applied (new ones
// created, removed ones cleaned up).
var reconfigureOp = operation{
	typ:   lifecycle.OpConfigure,
	steps: installSteps,
	onFailure: func(svc *lifecycle.Service, _ *lifecycle.Operation, _ string) {
		svc.Status = lifecycle.StatusUnhealthy
	},
}

// startReconfigure records a reconfiguration on svc (inside the request's
// transaction); phase is what the service shows meanwhile.
func startReconfigure(d *Deps, svc *lifecycle.Service, phase, by string) *lifecycle.Operation {
	op := reconfigureOp.start(d, svc, by, lifecycle.OperationParams{Phase: phase})
	op.ToVersion = svc.Version
	svc.Phase, svc.Status = phase, lifecycle.StatusBusy
	return op
}
