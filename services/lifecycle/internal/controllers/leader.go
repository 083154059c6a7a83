package controllers

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

// Run runs the controller loop until ctx ends: always on a single replica,
// only while leading when replicas share the store (their service views
// follow the store through the feed, leading or not).
func (c *Controller) Run(ctx context.Context) {
	if c.d.Leadership == nil {
		c.loop(ctx)
		return
	}
	for ctx.Err() == nil {
		led, resign, err := c.d.Leadership.Lead(ctx)
		if err != nil {
			if ctx.Err() == nil {
				c.d.Log.Warn("campaign for controller leadership; retrying", "error", err)
				wait(ctx, c.d.RetryBackoff)
			}
			continue
		}
		c.d.Log.Info("leading the controllers")
		c.loop(led)
		resign()
		if ctx.Err() == nil {
			c.d.Log.Warn("lost controller leadership; campaigning again")
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
