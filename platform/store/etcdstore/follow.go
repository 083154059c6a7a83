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
	return s.FollowProgress(ctx, bucket, reset, change, Progress{})
}

// Progress lets a Follow's caller know how far its view has come, in etcd
// revisions (what Store.Revision reports), so it can serve reads no older
// than a revision a client saw elsewhere.
type Progress struct {
	// Reached, when set, is told each etcd revision up to which every
	// change of the bucket has been delivered (after reset or change ran
	// for them).
	Reached func(rev int64)
	// Request, when set, asks etcd for a progress notification each time
	// it receives: a quiet bucket then reaches the cluster's current
	// revision too. etcd answers only while the watch is in step, so ask
	// again until Reached says enough.
	Request <-chan struct{}
}

// FollowProgress is Follow that also reports progress (see Progress).
func (s *Store) FollowProgress(ctx context.Context, bucket string, reset func([]store.Record), change func(Change), p Progress) error {
	if err := s.checkBucket(bucket); err != nil {
		return err
	}
	if p.Reached == nil {
		p.Reached = func(int64) {}
	}
	prefix := s.recordKey(bucket, "")
	for {
		err := s.followOnce(ctx, bucket, prefix, reset, change, p)
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

func (s *Store) followOnce(ctx context.Context, bucket, prefix string, reset func([]store.Record), change func(Change), p Progress) error {
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
	p.Reached(resp.Header.Revision)

	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	stop := context.AfterFunc(s.client.Ctx(), cancel)
	defer stop()
	if p.Request != nil {
		// Owned by this attempt: ends with wctx.
		go s.requestProgress(wctx, p.Request)
	}
	for wr := range s.client.Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			return fmt.Errorf("follow %s: %w", bucket, err)
		}
		if wr.IsProgressNotify() {
			// Every change up to the header's revision was delivered.
			s.observe(wr.Header.Revision)
			p.Reached(wr.Header.Revision)
			continue
		}
		if err := deliver(prefix, wr.Events, change); err != nil {
			return err
		}
		// Not the header's revision: a watch catching up may report the
		// cluster's revision before the last batch; a revision's events
		// always come in one response.
		if n := len(wr.Events); n > 0 {
			p.Reached(wr.Events[n-1].Kv.ModRevision)
		}
	}
	return fmt.Errorf("follow %s: the watch ended", bucket)
}

// deliver hands a watch response's events to change.
func deliver(prefix string, events []*clientv3.Event, change func(Change)) error {
	for _, ev := range events {
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
	return nil
}

// requestProgress asks etcd for a progress notification on the watch
// stream of ctx each time request receives, until ctx ends.
func (s *Store) requestProgress(ctx context.Context, request <-chan struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-request:
			// A failure is a lost watch, which Follow handles.
			_ = s.client.RequestProgress(ctx)
		}
	}
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
