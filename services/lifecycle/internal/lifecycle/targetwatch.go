package lifecycle

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// watchTargets subscribes to a driver that watches its targets: a change
// on a target (drift, a status kapp-controller set) makes the owning
// service due at once instead of at its next periodic check. Paused and
// inactive services stay untouched (ReconcileAll skips them).
func (m *Manager) watchTargets(ctx context.Context, w target.Watcher) {
	if err := w.Watch(ctx, m.targetChanged); err != nil {
		m.log.Warn("watch the targets; drift is found by the periodic checks only", "error", err)
	}
}

func (m *Manager) targetChanged(serviceID string) {
	m.mu.Lock()
	delete(m.lastCheck, serviceID)
	m.mu.Unlock()
	m.kickControllers()
}
