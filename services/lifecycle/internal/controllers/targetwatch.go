package controllers

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// WatchTargets subscribes to a driver that watches its targets, when it
// does: a change on a target (drift, a status kapp-controller set) makes
// the owning service due at once instead of at its next periodic check.
// Paused and inactive services stay untouched (their pass skips them).
func (c *Controller) WatchTargets(ctx context.Context) {
	w, ok := c.d.Driver.(target.Watcher)
	if !ok {
		return
	}
	if err := w.Watch(ctx, c.d.Queue.Add); err != nil {
		c.d.Log.Warn("watch the targets; drift is found by the periodic checks only", "error", err)
	}
}

// stillReconciled re-reads a service before a pass writes to its targets:
// one paused (or given an operation) while the pass read them is left
// alone.
func (c *Controller) stillReconciled(ctx context.Context, id string) bool {
	cur, err := c.d.Repo.Service(ctx, id)
	return err == nil && reconciled(cur)
}
