package manager

import (
	"context"
	"time"
)

// Leadership elects the one replica that runs the controllers, so two
// replicas never reconcile the same service.
type Leadership interface {
	// Lead blocks until this replica leads or ctx ends. The returned
	// context carries what fences the controllers' writes and ends when
	// the leadership is lost; resign gives it up.
	Lead(ctx context.Context) (led context.Context, resign func(), err error)
}

// runControllers runs the controller loop: always on a single replica, only
// while leading when replicas share the store (their service views follow
// the store through the Feed, leading or not).
func (m *core) runControllers(ctx context.Context) {
	if m.cfg.Leadership == nil {
		m.controllerLoop(ctx)
		return
	}
	for ctx.Err() == nil {
		led, resign, err := m.cfg.Leadership.Lead(ctx)
		if err != nil {
			if ctx.Err() == nil {
				m.Log.Warn("campaign for controller leadership; retrying", "error", err)
				wait(ctx, m.cfg.RetryBackoff)
			}
			continue
		}
		m.Log.Info("leading the controllers")
		m.controllerLoop(led)
		resign()
		if ctx.Err() == nil {
			m.Log.Warn("lost controller leadership; campaigning again")
		}
	}
}

// wait blocks for d or until ctx ends.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
