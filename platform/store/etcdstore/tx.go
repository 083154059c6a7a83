package etcdstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vcfsm/vcfsm/platform/store"
)

// tx is one attempt of an Update. Every read sees the same etcd revision
// (rev), so fn works on a consistent snapshot; writes are buffered until
// commit. Like a bbolt transaction it is not safe for concurrent use.
//
// Conflict detection at commit (the read set):
//   - a key read on its own (Get, or the lookup Put and Delete do) is
//     compared by ModRevision with what fn saw, 0 meaning "still absent";
//   - a List range is guarded by "every key in the range has ModRevision <=
//     rev", which catches updates and inserts in exactly that range, plus
//     "the bucket's delete marker has ModRevision <= rev", which catches
//     deletes (a deleted key leaves nothing in the range to compare). Keys
//     inside a listed range need no compare of their own.
//
// The delete marker is coarse on purpose: any delete in the bucket makes a
// concurrent lister of that bucket retry, in exchange for one compare per
// listed bucket instead of one per listed key (etcd caps compares per Txn,
// 128 by default). Deletes are rare next to updates in this system.
type tx struct {
	ctx context.Context
	s   *Store
	// rev is the etcd revision of the snapshot; 0 until the first read.
	rev int64
	// snap is what fn observed at rev, by etcd key, absent keys included.
	snap map[string]state
	// listed are the key ranges (etcd key prefixes) read in full by List.
	listed []listing
	writes map[string]write
	// err is the first failed read: later calls return it and commit
	// refuses, so fn cannot commit on a snapshot it only partly saw.
	err error
	// compacted: etcd compacted rev away during this attempt.
	compacted bool
}

type state struct {
	modRev int64 // etcd ModRevision; 0 when the key is absent
	raw    []byte
}

func (st state) exists() bool { return st.modRev != 0 }

type listing struct {
	bucket string
	prefix string
}

type write struct {
	bucket  string
	raw     []byte
	deleted bool
}

var _ store.Tx = (*tx)(nil)

func newTx(ctx context.Context, s *Store) *tx {
	return &tx{ctx: ctx, s: s, snap: map[string]state{}, writes: map[string]write{}}
}

// read runs one range request at the snapshot revision; the first read of
// an attempt fixes that revision.
func (t *tx) read(what, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	if t.rev != 0 {
		opts = append(opts, clientv3.WithRev(t.rev))
	}
	resp, err := t.s.get(t.ctx, what, key, opts...)
	if err != nil {
		t.compacted = errors.Is(err, rpctypes.ErrCompacted)
		t.err = err
		return nil, err
	}
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
	return resp, nil
}

func (t *tx) covered(key string) bool {
	for _, l := range t.listed {
		if strings.HasPrefix(key, l.prefix) {
			return true
		}
	}
	return false
}

// snapshot returns the state of an etcd key at rev.
func (t *tx) snapshot(key string) (state, error) {
	if st, ok := t.snap[key]; ok {
		return st, nil
	}
	if t.covered(key) {
		// A List read the whole range and did not find it.
		t.snap[key] = state{}
		return state{}, nil
	}
	resp, err := t.read("read "+strings.TrimPrefix(key, t.s.prefix), key)
	if err != nil {
		return state{}, err
	}
	var st state
	if len(resp.Kvs) > 0 {
		st = state{modRev: resp.Kvs[0].ModRevision, raw: resp.Kvs[0].Value}
	}
	t.snap[key] = st
	return st, nil
}

// load returns the raw value of an etcd key as fn should see it: its own
// writes first, then the snapshot.
func (t *tx) load(key string) ([]byte, bool, error) {
	if t.err != nil {
		return nil, false, t.err
	}
	if w, ok := t.writes[key]; ok {
		return w.raw, !w.deleted, nil
	}
	st, err := t.snapshot(key)
	return st.raw, st.exists(), err
}

func (t *tx) putRaw(bucket, key string, raw []byte) {
	t.writes[key] = write{bucket: bucket, raw: raw}
}

func (t *tx) record(bucket, key string) (store.Record, bool, error) {
	if err := t.s.checkBucket(bucket); err != nil {
		return store.Record{}, false, err
	}
	raw, ok, err := t.load(t.s.recordKey(bucket, key))
	if err != nil || !ok {
		return store.Record{}, false, err
	}
	rec, err := decode(key, raw)
	return rec, err == nil, err
}

func (t *tx) Get(bucket, key string) (store.Record, error) {
	rec, ok, err := t.record(bucket, key)
	if err != nil {
		return store.Record{}, err
	}
	if !ok {
		return store.Record{}, fmt.Errorf("%s/%s: %w", bucket, key, store.ErrNotFound)
	}
	return rec, nil
}

func (t *tx) List(bucket, prefix string) ([]store.Record, error) {
	if t.err != nil {
		return nil, t.err
	}
	if err := t.s.checkBucket(bucket); err != nil {
		return nil, err
	}
	rangePrefix := t.s.recordKey(bucket, prefix)
	if !t.covered(rangePrefix) {
		resp, err := t.read("list "+bucket+"/"+prefix+"*", rangePrefix, clientv3.WithPrefix())
		if err != nil {
			return nil, err
		}
		for _, kv := range resp.Kvs {
			t.snap[string(kv.Key)] = state{modRev: kv.ModRevision, raw: kv.Value}
		}
		t.listed = append(t.listed, listing{bucket: bucket, prefix: rangePrefix})
	}
	// The snapshot now holds every key of the range; overlay fn's writes.
	view := map[string][]byte{}
	for k, st := range t.snap {
		if st.exists() && strings.HasPrefix(k, rangePrefix) {
			view[k] = st.raw
		}
	}
	for k, w := range t.writes {
		if !strings.HasPrefix(k, rangePrefix) {
			continue
		}
		if w.deleted {
			delete(view, k)
		} else {
			view[k] = w.raw
		}
	}
	strip := len(t.s.recordKey(bucket, ""))
	recs := make([]store.Record, 0, len(view))
	for _, k := range slices.Sorted(maps.Keys(view)) {
		rec, err := decode(k[strip:], view[k])
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// current is the revision fn sees for the key, 0 when absent.
func (t *tx) current(bucket, key string) (int64, error) {
	rec, ok, err := t.record(bucket, key)
	if err != nil || !ok {
		return 0, err
	}
	return rec.Revision, nil
}

// Put buffers the write and returns the revision the record will carry:
// rev+1, one above the snapshot. The commit's compares guarantee the key
// is unchanged since rev, so this revision is above every earlier revision
// of the key (never reused) and above every revision committed before this
// Update started (increasing across keys and buckets).
func (t *tx) Put(bucket, key string, value []byte, expect int64) (int64, error) {
	if key == "" {
		return 0, fmt.Errorf("etcdstore: put into bucket %q: empty key", bucket)
	}
	cur, err := t.current(bucket, key)
	if err != nil {
		return 0, err
	}
	if err := store.CheckRevision(bucket, key, cur, expect); err != nil {
		return 0, err
	}
	rev := t.rev + 1
	t.writes[t.s.recordKey(bucket, key)] = write{bucket: bucket, raw: encode(rev, value)}
	return rev, nil
}

func (t *tx) Delete(bucket, key string, expect int64) error {
	cur, err := t.current(bucket, key)
	if err != nil {
		return err
	}
	if cur == 0 && (expect == store.AnyRevision || expect == store.MustNotExist) {
		return nil
	}
	if err := store.CheckRevision(bucket, key, cur, expect); err != nil {
		return err
	}
	t.writes[t.s.recordKey(bucket, key)] = write{bucket: bucket, deleted: true}
	return nil
}

// commit applies the buffered writes in one etcd Txn guarded by the read
// set. It reports false when the guard failed (another writer got there
// first) and nothing was written.
func (t *tx) commit() (bool, error) {
	var ops []clientv3.Op
	deletedFrom := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(t.writes)) {
		w := t.writes[k]
		switch {
		case !w.deleted:
			ops = append(ops, clientv3.OpPut(k, string(w.raw)))
		case t.snap[k].exists():
			ops = append(ops, clientv3.OpDelete(k))
			deletedFrom[w.bucket] = true
		}
	}
	if len(ops) == 0 {
		// Nothing to write: reads of one revision are already serializable.
		return true, nil
	}
	for _, b := range slices.Sorted(maps.Keys(deletedFrom)) {
		ops = append(ops, clientv3.OpPut(t.s.deleteMarker(b), ""))
	}

	var cmps []clientv3.Cmp
	for _, k := range slices.Sorted(maps.Keys(t.snap)) {
		if !t.covered(k) {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", t.snap[k].modRev))
		}
	}
	listedBuckets := map[string]bool{}
	for _, l := range t.listed {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(l.prefix).WithPrefix(), "<", t.rev+1))
		listedBuckets[l.bucket] = true
	}
	for _, b := range slices.Sorted(maps.Keys(listedBuckets)) {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(t.s.deleteMarker(b)), "<", t.rev+1))
	}

	fence, fenced := store.FenceOf(t.ctx)
	var orElse []clientv3.Op
	if fenced {
		cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(fence.Key), "=", fence.Revision))
		orElse = append(orElse, clientv3.OpGet(fence.Key))
	}

	ctx, cancel := t.s.requestContext(t.ctx)
	defer cancel()
	resp, err := t.s.client.Txn(ctx).If(cmps...).Then(ops...).Else(orElse...).Commit()
	switch {
	case errors.Is(err, rpctypes.ErrTooManyOps):
		return false, fmt.Errorf("etcdstore: commit of %d writes guarded by %d compares exceeds etcd's --max-txn-ops; split the update or raise the limit: %w",
			len(ops), len(cmps), err)
	case err != nil:
		return false, t.s.explain(t.ctx, "commit (it may or may not have been applied; re-read before retrying)", err)
	}
	t.s.observe(resp.Header.Revision)
	if !resp.Succeeded && fenced && lostFence(resp, fence) {
		t.s.fencedWrites.Add(1)
		return false, fmt.Errorf("etcdstore: commit of %d writes refused: ownership %s (revision %d) is gone: %w",
			len(ops), fence.Key, fence.Revision, store.ErrFenced)
	}
	return resp.Succeeded, nil
}

// lostFence reports whether a failed commit failed on its fence: the
// ownership record is absent or another one.
func lostFence(resp *clientv3.TxnResponse, fence store.Fence) bool {
	if len(resp.Responses) == 0 {
		return true
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	return len(kvs) == 0 || kvs[0].CreateRevision != fence.Revision
}
