package lifecycle

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
// while leading when replicas share the store. A replica that does not lead
// still refreshes its view of the services.
func (m *core) runControllers(ctx context.Context) {
	if m.cfg.Leadership == nil {
		m.controllerLoop(ctx)
		return
	}
	following, stopFollowing := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		m.follow(following)
	}()
	defer func() {
		stopFollowing()
		<-followed
	}()
	for ctx.Err() == nil {
		led, resign, err := m.cfg.Leadership.Lead(ctx)
		if err != nil {
			if ctx.Err() == nil {
				m.log.Warn("campaign for controller leadership; retrying", "error", err)
				wait(ctx, m.cfg.RetryBackoff)
			}
			continue
		}
		m.log.Info("leading the controllers")
		m.controllerLoop(led)
		resign()
		if ctx.Err() == nil {
			m.log.Warn("lost controller leadership; campaigning again")
		}
	}
}

// follow refreshes the service view every RefreshInterval until ctx ends.
func (m *core) follow(ctx context.Context) {
	r, ok := m.repo.(interface{ Refresh(context.Context) error })
	if !ok || m.cfg.RefreshInterval <= 0 {
		return
	}
	t := time.NewTicker(m.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := r.Refresh(ctx); err != nil && ctx.Err() == nil {
				m.log.Warn("refresh the service view", "error", err)
			}
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
