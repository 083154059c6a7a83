package manager

import (
	"context"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// operationDef is what the journal needs to run one type of operation: its
// steps (by name, run one at a time by the engine) and what a failure does
// to the service. Each operation's file (op_*.go) lists its steps in order.
type operationDef struct {
	run       func(ctx context.Context, m *core, r *run, step string) error
	onFailure func(svc *lifecycle.Service, op *lifecycle.Operation, outcome string)
}

// operations maps operation types to their definitions.
var operations = map[string]operationDef{
	lifecycle.OpRegister:  registerOperation,
	lifecycle.OpActivate:  activateOperation,
	lifecycle.OpConfigure: reconfigureOperation,
	lifecycle.OpUpgrade:   upgradeOperation,
	lifecycle.OpRollback:  rollbackOperation,
	lifecycle.OpDelete:    deleteOperation,
}
