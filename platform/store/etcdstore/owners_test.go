package etcdstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
)

func newOwners(t *testing.T, s *etcdstore.Store, replica string) *etcdstore.Owners {
	t.Helper()
	o, err := s.NewOwners(replica, 2*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = o.Close() })
	return o
}

// One replica owns a name at a time; a replica whose lease is gone (here
// revoked behind its back, as when it is paused past its TTL) cannot write
// under its old claim even though it never noticed, and another replica
// takes the name over.
func TestOwnershipAndFencing(t *testing.T) {
	ctx := context.Background()
	prefix := newPrefix()
	s1, s2 := openAt(t, prefix, schema), openAt(t, prefix, schema)
	o1, o2 := newOwners(t, s1, "replica-1"), newOwners(t, s2, "replica-2")

	c1, err := o1.Claim(ctx, "svc-a")
	require.NoError(t, err)
	_, err = o2.Claim(ctx, "svc-a")
	require.ErrorIs(t, err, etcdstore.ErrOwned)
	require.ErrorContains(t, err, "replica replica-1 holds it")
	again, err := o1.Claim(ctx, "svc-a")
	require.NoError(t, err, "claiming what it holds is idempotent")
	require.Equal(t, c1.Fence, again.Fence)

	fenced1 := store.WithFence(ctx, c1.Fence)
	_, err = store.Put(fenced1, s1, "services", "a", []byte("by-1"), store.AnyRevision)
	require.NoError(t, err, "the owner writes")

	// replica-1's lease ends without replica-1 taking part.
	raw := rawClient(t)
	got, err := raw.Get(ctx, c1.Fence.Key)
	require.NoError(t, err)
	require.Len(t, got.Kvs, 1)
	_, err = raw.Revoke(ctx, clientv3.LeaseID(got.Kvs[0].Lease))
	require.NoError(t, err)

	c2, err := o2.Claim(ctx, "svc-a")
	require.NoError(t, err, "the name is free once the owner's lease is gone")
	_, err = store.Put(store.WithFence(ctx, c2.Fence), s2, "services", "a", []byte("by-2"), store.AnyRevision)
	require.NoError(t, err)

	_, err = store.Put(fenced1, s1, "services", "a", []byte("late-by-1"), store.AnyRevision)
	require.ErrorIs(t, err, store.ErrFenced, "the old owner's write is refused")
	require.Equal(t, int64(1), s1.FencedWrites())
	rec, err := s1.Get(ctx, "services", "a")
	require.NoError(t, err)
	require.Equal(t, "by-2", string(rec.Value), "nothing of the refused write was kept")

	// The old owner's release does not free the new owner's claim; it
	// rejoins with a new lease and finds the name taken.
	require.NoError(t, o1.Release(ctx, c1))
	_, err = o1.Claim(ctx, "svc-a")
	require.ErrorIs(t, err, etcdstore.ErrOwned)
	require.ErrorContains(t, err, "replica-2")

	// Released, the name goes to whoever claims next.
	require.NoError(t, o2.Release(ctx, c2))
	_, err = o1.Claim(ctx, "svc-a")
	require.NoError(t, err)
}

// Exactly one replica leads; the next leads once the leader resigns, and
// writes fenced by a resigned leadership are refused.
func TestLeaderElection(t *testing.T) {
	ctx := context.Background()
	prefix := newPrefix()
	s1, s2 := openAt(t, prefix, schema), openAt(t, prefix, schema)
	o1, o2 := newOwners(t, s1, "replica-1"), newOwners(t, s2, "replica-2")

	lead1, resign1, err := o1.Lead(ctx)
	require.NoError(t, err)
	waitCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	_, _, err = o2.Lead(waitCtx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a second leader while the first leads")

	resign1()
	_, resign2, err := o2.Lead(ctx)
	require.NoError(t, err)
	defer resign2()
	_, err = store.Put(store.WithFence(ctx, lead1.Fence), s1, "services", "x", []byte("1"), store.AnyRevision)
	require.ErrorIs(t, err, store.ErrFenced)
}
