package etcdstore

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vcfsm/vcfsm/platform/store"
)

// Change is one committed change of a record seen by Follow.
type Change struct {
	// Key is the record's key in its bucket.
	Key string
	// Record is the new record; zero when Deleted.
	Record  store.Record
	Deleted bool
}

// Follow keeps a view of one bucket in step with etcd, whichever replica
// writes: reset receives every record of the bucket as of one etcd
// revision, then change receives every later commit's changes in commit
// order, within milliseconds. When the watch is lost (compaction, this
// replica cut off from the etcd leader, a network error), Follow starts
// over with a new reset once etcd answers again. It returns when ctx ends.
func (s *Store) Follow(ctx context.Context, bucket string, reset func([]store.Record), change func(Change)) error {
	if err := s.checkBucket(bucket); err != nil {
		return err
	}
	prefix := s.recordKey(bucket, "")
	for {
		err := s.followOnce(ctx, bucket, prefix, reset, change)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if s.closed.Load() {
			return store.ErrClosed
		}
		if err != nil {
			// Try again soon: etcd is away or the watch was cancelled.
			if err := backoffFor(ctx, 500*time.Millisecond); err != nil {
				return err
			}
		}
	}
}

func (s *Store) followOnce(ctx context.Context, bucket, prefix string, reset func([]store.Record), change func(Change)) error {
	resp, err := s.get(ctx, "follow "+bucket, prefix, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	recs := make([]store.Record, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		rec, err := decode(string(kv.Key[len(prefix):]), kv.Value)
		if err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	reset(recs)

	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	stop := context.AfterFunc(s.client.Ctx(), cancel)
	defer stop()
	for wr := range s.client.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("follow %s: %w", bucket, err)
		}
		for _, ev := range wr.Events {
			key := string(ev.Kv.Key[len(prefix):])
			if ev.Type == clientv3.EventTypeDelete {
				change(Change{Key: key, Deleted: true})
				continue
			}
			rec, err := decode(key, ev.Kv.Value)
			if err != nil {
				return err
			}
			change(Change{Key: key, Record: rec})
		}
	}
	return fmt.Errorf("follow %s: the watch ended", bucket)
}

// backoffFor waits d or until ctx ends.
func backoffFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
