package reads

import (
	"context"
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// RolloutView is a service's running (or last) rollout in full.
type RolloutView struct {
	OperationID string
	State       *lifecycle.RolloutState
	Paused      bool
}

// Rollout returns a service's running (or last) rollout, read from its
// operation's journal.
func (r *Reader) Rollout(ctx context.Context, id string) (*RolloutView, error) {
	svc, err := r.View(ctx, id)
	if err != nil {
		return nil, err
	}
	if svc.Rollout == nil {
		return nil, fmt.Errorf("service %s has never rolled out (an upgrade rolls out with a rollout strategy): %w", id, lifecycle.ErrNotFound)
	}
	op, err := r.d.Repo.Operation(ctx, id, svc.Rollout.OperationID)
	if err != nil {
		return nil, err
	}
	if op.Rollout == nil {
		return nil, fmt.Errorf("service %s: rollout %s has not laid out its waves yet: %w", id, op.ID, lifecycle.ErrNotFound)
	}
	view := &RolloutView{OperationID: op.ID, State: op.Rollout}
	if c := svc.RolloutControl; c != nil && c.OperationID == op.ID {
		view.Paused = c.Paused
	}
	return view, nil
}

// RolloutStrategies are the provider's rollout strategies.
func (r *Reader) RolloutStrategies(ctx context.Context) (*lifecycle.RolloutStrategies, error) {
	return r.d.Repo.RolloutStrategies(ctx)
}
