package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
)

// Claims makes a service's operations run on one replica at a time
// (engine.Claims over etcd leases): the replica that claims a service owns
// the key _owners/service/<id> on its lease, and every write its operation
// makes is fenced by that key.
type Claims struct{ Owners *etcdstore.Owners }

var _ engine.Claims = Claims{}

// Claim implements engine.Claims.
func (c Claims) Claim(ctx context.Context, service string) (context.Context, func(), error) {
	cl, err := c.Owners.Claim(ctx, "service/"+service)
	if errors.Is(err, etcdstore.ErrOwned) {
		return nil, nil, fmt.Errorf("%w: %w", engine.ErrClaimed, err)
	}
	if err != nil {
		return nil, nil, err
	}
	claimed, release := guarded(ctx, cl)
	return claimed, func() {
		release()
		_ = c.Owners.Release(context.WithoutCancel(ctx), cl)
	}, nil
}

// Leader elects the one replica that runs the controllers; their writes
// are fenced by the leadership.
type Leader struct{ Owners *etcdstore.Owners }

// Lead blocks until this replica leads or ctx ends. The returned context
// ends when the leadership is lost; resign gives it up.
func (l Leader) Lead(ctx context.Context) (context.Context, func(), error) {
	cl, resign, err := l.Owners.Lead(ctx)
	if err != nil {
		return nil, nil, err
	}
	led, release := guarded(ctx, cl)
	return led, func() {
		release()
		resign()
	}, nil
}

// guarded returns a context fenced by the claim that ends when the claim
// is lost, and the function that ends it.
func guarded(ctx context.Context, cl etcdstore.Claim) (context.Context, func()) {
	out, cancel := context.WithCancel(store.WithFence(ctx, cl.Fence))
	go func() {
		select {
		case <-cl.Lost:
			cancel()
		case <-out.Done():
		}
	}()
	return out, cancel
}
