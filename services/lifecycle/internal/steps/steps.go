// Package steps holds the operation steps as functions over the ports and
// values they need. internal/manager lists each operation's steps in order
// and calls them; a step knows nothing of the operation it runs in.
package steps

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Writer commits a change to one service. Steps write through the host
// rather than the repository: the host announces each commit to watchers
// and queues the controllers.
type Writer interface {
	Mutate(ctx context.Context, id string, fn func(tx lifecycle.Tx, svc *lifecycle.Service) error) (*lifecycle.Service, error)
	Update(ctx context.Context, fn func(tx lifecycle.Tx) error) error
}
