package lifecycle

import "context"

// operationDef is what the journal needs to run one type of operation: its
// steps (by name, run one at a time by the engine) and what a failure does
// to the service. Each operation's file (op_*.go) lists its steps in order.
type operationDef struct {
	run       func(ctx context.Context, m *core, r *run, step string) error
	onFailure func(svc *Service, op *Operation, outcome string)
}

// operations maps operation types to their definitions.
var operations = map[string]operationDef{
	OpRegister:  registerOperation,
	OpActivate:  activateOperation,
	OpConfigure: reconfigureOperation,
	OpUpgrade:   upgradeOperation,
	OpRollback:  rollbackOperation,
	OpDelete:    deleteOperation,
}
