package manager

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// watchTargets subscribes to a driver that watches its targets: a change
// on a target (drift, a status kapp-controller set) makes the owning
// service due at once instead of at its next periodic check. Paused and
// inactive services stay untouched (ReconcileAll skips them).
func (m *core) watchTargets(ctx context.Context, w target.Watcher) {
	if err := w.Watch(ctx, m.targetChanged); err != nil {
		m.Log.Warn("watch the targets; drift is found by the periodic checks only", "error", err)
	}
}

func (m *core) targetChanged(serviceID string) {
	m.queue.Add(serviceID)
}

// stillReconciled re-reads a service before a pass writes to its targets:
// one paused (or given an operation) while the pass read them is left
// alone.
func (m *core) stillReconciled(ctx context.Context, id string) bool {
	cur, err := m.Repo.Service(ctx, id)
	return err == nil && reconciled(cur)
}
