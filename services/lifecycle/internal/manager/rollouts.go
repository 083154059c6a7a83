package manager

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/ops"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/reads"
)

// Rollouts is the door of the fleet rollouts: the RolloutService's calls,
// each handed to its room.
type Rollouts struct {
	runner *ops.Runner
	reader *reads.Reader
}

// Rollouts is the fleet rollouts' door.
func (m *Manager) Rollouts() *Rollouts { return &Rollouts{runner: m.runner, reader: m.reader} }

// Get returns a service's running (or last) rollout (reads).
func (f *Rollouts) Get(ctx context.Context, id string) (*reads.RolloutView, error) {
	return f.reader.Rollout(ctx, id)
}

// Act approves, pauses, resumes or aborts a running rollout (ops) and
// returns it.
func (f *Rollouts) Act(ctx context.Context, id string, a ops.RolloutAction) (*reads.RolloutView, error) {
	if _, err := f.runner.ActOnRollout(ctx, id, a); err != nil {
		return nil, err
	}
	return f.reader.Rollout(ctx, id)
}

// Quarantine marks a version quarantined, or clears it with q nil (ops).
func (f *Rollouts) Quarantine(ctx context.Context, name, version string, q *lifecycle.Quarantine) (*lifecycle.CatalogEntry, error) {
	return f.runner.QuarantineVersion(ctx, name, version, q)
}

// Strategies returns the provider's rollout strategies (reads).
func (f *Rollouts) Strategies(ctx context.Context) (*lifecycle.RolloutStrategies, error) {
	return f.reader.RolloutStrategies(ctx)
}

// PutStrategies replaces the provider's rollout strategies (ops).
func (f *Rollouts) PutStrategies(ctx context.Context, s *lifecycle.RolloutStrategies) (*lifecycle.RolloutStrategies, error) {
	if err := f.runner.PutRolloutStrategies(ctx, s); err != nil {
		return nil, err
	}
	return f.reader.RolloutStrategies(ctx)
}
