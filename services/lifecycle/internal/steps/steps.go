// Package steps holds the operation steps as functions over the ports and
// values they need. internal/manager lists each operation's steps in order
// and calls them; a step knows nothing of the operation it runs in.
package steps

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Writer commits a change to one service. Steps write through the host
// rather than the repository: the host announces each commit to watchers
// and queues the controllers.
type Writer interface {
	Mutate(ctx context.Context, id string, fn func(tx lifecycle.Tx, svc *lifecycle.Service) error) (*lifecycle.Service, error)
	Update(ctx context.Context, fn func(tx lifecycle.Tx) error) error
}

// InventoryReader reads the platform inventory.
type InventoryReader interface {
	Inventory(ctx context.Context) (*lifecycle.Inventory, error)
}

// RenderPorts are what rendering reads: the platform inventory (for the
// inventory layer) and the renderer.
type RenderPorts struct {
	Inventory InventoryReader
	Renderer  lifecycle.Renderer
}

// CheckPorts are what a compatibility evaluation reads: the inventory (the
// Supervisors' versions) and the compatibility service.
type CheckPorts struct {
	Inventory     InventoryReader
	Compatibility lifecycle.Compatibility
}

// HookPorts are what a pre-check hook needs: the service's resource records
// (where it runs), the targets (the Supervisors' secrets) and the precheck
// service.
type HookPorts struct {
	Repo     lifecycle.Repository
	Driver   target.Driver
	Precheck lifecycle.Precheck
}
