package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/vcfsm/vcfsm/platform/store"
)

// ErrOwned: another live replica owns the name.
var ErrOwned = errors.New("etcdstore: owned by another replica")

// Owners hands out exclusive ownership of names (a service's operations,
// the controllers) to one replica at a time, on a lease of this replica's
// etcd session (go.etcd.io/etcd/client/v3/concurrency). The session is kept
// alive in the background; when the replica dies or is cut off, the lease
// expires after its TTL and every name it owned is free for another
// replica. Each ownership carries a store.Fence, so writes made under it
// are refused once it is gone.
//
// Keys: <prefix>_owners/<name> holds the owning replica's id, attached to
// its lease; <prefix>_leader/ is the controllers' election.
type Owners struct {
	s       *Store
	replica string
	ttl     time.Duration

	mu      sync.Mutex
	session *concurrency.Session
}

// Claim is one held ownership.
type Claim struct {
	// Fence guards the writes made under the claim (store.WithFence).
	Fence store.Fence
	// Lost closes when the lease behind the claim is gone: the replica
	// must stop acting on the name.
	Lost <-chan struct{}
}

// NewOwners starts this replica's session with the given lease TTL
// (rounded up to whole seconds, etcd's unit).
func (s *Store) NewOwners(replica string, ttl time.Duration) (*Owners, error) {
	if replica == "" {
		return nil, errors.New("etcdstore: owners need a replica id")
	}
	if ttl < time.Second {
		return nil, fmt.Errorf("etcdstore: owner lease TTL %s is below etcd's one second", ttl)
	}
	o := &Owners{s: s, replica: replica, ttl: ttl}
	if _, err := o.current(context.Background()); err != nil {
		return nil, err
	}
	return o, nil
}

// current returns a live session, starting a new one when the last one
// expired (a replica cut off and reconnected rejoins with a new lease).
func (o *Owners) current(ctx context.Context) (*concurrency.Session, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.session != nil {
		select {
		case <-o.session.Done():
		default:
			return o.session, nil
		}
	}
	// The lease is granted within the request timeout (a replica cut off
	// from etcd gets an error, not a hang); the session then keeps it
	// alive in the background until Close or until it expires.
	rctx, cancel := o.s.requestContext(ctx)
	defer cancel()
	ttl := int64((o.ttl + time.Second - 1) / time.Second)
	lease, err := o.s.client.Grant(rctx, ttl)
	if err != nil {
		return nil, o.s.explain(ctx, "grant the owner lease", err)
	}
	sess, err := concurrency.NewSession(o.s.client, concurrency.WithLease(lease.ID), concurrency.WithTTL(int(ttl)), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return nil, o.s.explain(ctx, "start the owner session", err)
	}
	o.session = sess
	return sess, nil
}

func (o *Owners) ownerKey(name string) string { return o.s.prefix + "_owners/" + name }

// Claim takes ownership of name for this replica, or returns ErrOwned
// naming the replica that holds it. Claiming a name this replica already
// holds on its current lease returns that claim again.
func (o *Owners) Claim(ctx context.Context, name string) (Claim, error) {
	sess, resp, err := o.tryClaim(ctx, name)
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		// The lease expired before the session noticed: start a new one.
		o.forget(sess)
		sess, resp, err = o.tryClaim(ctx, name)
	}
	if err != nil {
		return Claim{}, o.s.explain(ctx, "claim "+name, err)
	}
	key := o.ownerKey(name)
	if resp.Succeeded {
		return Claim{Fence: store.Fence{Key: key, Revision: resp.Header.Revision}, Lost: sess.Done()}, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 1 && clientv3.LeaseID(kvs[0].Lease) == sess.Lease() {
		return Claim{Fence: store.Fence{Key: key, Revision: kvs[0].CreateRevision}, Lost: sess.Done()}, nil
	}
	holder := "unknown"
	if len(kvs) == 1 {
		holder = string(kvs[0].Value)
	}
	return Claim{}, fmt.Errorf("%s: replica %s holds it: %w", name, holder, ErrOwned)
}

func (o *Owners) tryClaim(ctx context.Context, name string) (*concurrency.Session, *clientv3.TxnResponse, error) {
	sess, err := o.current(ctx)
	if err != nil {
		return nil, nil, err
	}
	key := o.ownerKey(name)
	rctx, cancel := o.s.requestContext(ctx)
	defer cancel()
	resp, err := o.s.client.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, o.replica, clientv3.WithLease(sess.Lease()))).
		Else(clientv3.OpGet(key)).Commit()
	return sess, resp, err
}

// forget drops a session whose lease is gone; the next claim starts anew.
func (o *Owners) forget(sess *concurrency.Session) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.session == sess && sess != nil {
		_ = sess.Close() // its lease is gone already; this stops the keepalive
		o.session = nil
	}
}

// Release gives a claim up at once (instead of at lease expiry); a claim
// already lost is left alone.
func (o *Owners) Release(ctx context.Context, c Claim) error {
	rctx, cancel := o.s.requestContext(ctx)
	defer cancel()
	_, err := o.s.client.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(c.Fence.Key), "=", c.Fence.Revision)).
		Then(clientv3.OpDelete(c.Fence.Key)).Commit()
	if err != nil {
		return o.s.explain(ctx, "release "+c.Fence.Key, err)
	}
	return nil
}

// Lead blocks until this replica is the elected leader (or ctx ends) and
// returns the leadership as a claim; resign gives it up.
func (o *Owners) Lead(ctx context.Context) (c Claim, resign func(), err error) {
	sess, err := o.current(ctx)
	if err != nil {
		return Claim{}, nil, err
	}
	e := concurrency.NewElection(sess, o.s.prefix+"_leader/")
	if err := e.Campaign(ctx, o.replica); err != nil {
		return Claim{}, nil, o.s.explain(ctx, "campaign for controller leadership", err)
	}
	c = Claim{Fence: store.Fence{Key: e.Key(), Revision: e.Rev()}, Lost: sess.Done()}
	return c, func() {
		rctx, cancel := o.s.requestContext(context.WithoutCancel(ctx))
		defer cancel()
		_ = e.Resign(rctx)
	}, nil
}

// Close ends the session and revokes its lease: every name this replica
// owns is free at once (a graceful stop hands over without waiting for the
// TTL).
func (o *Owners) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.session == nil {
		return nil
	}
	err := o.session.Close()
	o.session = nil
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcdstore: close the owner session: %w", err)
	}
	return nil
}
