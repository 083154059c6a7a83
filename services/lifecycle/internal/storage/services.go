package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protojson"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	"github.com/vcfsm/vcfsm/platform/seal"
	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/boltstore"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/wire"
)

const keyInventory = "inventory"

// Repo implements lifecycle.Repository over a store.Store, with an
// in-memory copy of every service so lists and filters over thousands of
// services need no store reads. The copy is written through after every
// committed transaction of this process; Refresh reloads it (several
// replicas on one etcd refresh periodically).
type Repo struct {
	s store.Store
	// keys seal value layers and resources at rest (sealed.go); nil
	// stores them in the clear.
	keys *seal.Keyring

	mu       sync.RWMutex
	services map[string]*lifecycle.Service
	// snapshot is the services as a slice, patched after writes.
	snapshot servicesSlice

	catalogs catalogCache
	// resources keeps decoded resource records (resmemo.go).
	resources resourceMemo
	// view is how far the service cache has followed the store.
	view viewRevision
}

var _ lifecycle.Repository = (*Repo)(nil)

// NewRepo wraps a store opened with Schema and loads the service cache;
// nothing is sealed at rest.
func NewRepo(ctx context.Context, s store.Store) (*Repo, error) {
	return NewSealedRepo(ctx, s, nil)
}

// NewSealedRepo is NewRepo sealing every value that can hold a secret
// with keys (sealed.go); nil keys store them in the clear.
func NewSealedRepo(ctx context.Context, s store.Store, keys *seal.Keyring) (*Repo, error) {
	r := &Repo{s: s, keys: keys}
	if err := r.Refresh(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// Refresh reloads the service cache from the store.
func (r *Repo) Refresh(ctx context.Context) error {
	recs, err := r.s.List(ctx, BucketServices, "")
	if err != nil {
		return fmt.Errorf("load services: %w", err)
	}
	m := make(map[string]*lifecycle.Service, len(recs))
	for _, rec := range recs {
		svc, err := decodeService(r.keys, rec)
		if err != nil {
			return err
		}
		m[svc.ID] = svc
	}
	r.mu.Lock()
	r.services = m
	r.snapshot.forget()
	r.mu.Unlock()
	r.catalogs.drop("")
	return nil
}

// CatalogGeneration moves whenever a catalog entry may have changed.
func (r *Repo) CatalogGeneration() uint64 { return r.catalogs.generation() }

// Service returns a copy of one service.
func (r *Repo) Service(ctx context.Context, id string) (*lifecycle.Service, error) {
	svc, err := r.SharedService(ctx, id)
	if err != nil {
		return nil, err
	}
	return svc.Clone(), nil
}

// SharedService returns the stored snapshot of one service without a copy:
// snapshots are replaced on every write, never changed in place, so a
// reader that does not modify it sees one consistent revision.
func (r *Repo) SharedService(_ context.Context, id string) (*lifecycle.Service, error) {
	r.mu.RLock()
	svc, ok := r.services[id]
	r.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("service %s: %w", id, lifecycle.ErrNotFound)
	}
	return svc, nil
}

// Services returns every service, in no particular order. The slice and
// its values are shared snapshots: callers must not modify them. A service
// keeps its position from one slice to the next while others change, so
// two slices can be compared position by position (snapshot.go).
func (r *Repo) Services(context.Context) []*lifecycle.Service {
	r.mu.RLock()
	fresh, snap := r.snapshot.fresh(), r.snapshot.slice
	r.mu.RUnlock()
	if fresh {
		return snap
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.snapshot.current(r.services)
}

// Update runs fn in one store transaction and refreshes the cache with the
// services it wrote once the transaction committed.
func (r *Repo) Update(ctx context.Context, fn func(lifecycle.Tx) error) error {
	var t *tx
	err := r.s.Update(ctx, func(stx store.Tx) error {
		t = &tx{stx: stx, written: map[string]*lifecycle.Service{}, keys: r.keys, cached: r.cachedAt, resources: &r.resources}
		return fn(t)
	})
	if t != nil && len(t.catalogNames) > 0 {
		// Dropped whether or not the transaction committed: a failed
		// commit leaves the cache merely cold.
		r.catalogs.drop(t.catalogNames...)
	}
	if err != nil {
		return translate(err)
	}
	r.mu.Lock()
	for id, svc := range t.written {
		r.snapshot.touch(id)
		if svc == nil {
			delete(r.services, id)
		} else {
			r.services[id] = svc
		}
	}
	r.mu.Unlock()
	return nil
}

// UnboundedUpdates reports a store that takes any number of writes in one
// transaction: bbolt does, etcd bounds them (--max-txn-ops).
func (r *Repo) UnboundedUpdates() bool {
	_, ok := store.Unwrap(r.s).(*boltstore.Store)
	return ok
}

// Resources lists a service's resources.
func (r *Repo) Resources(ctx context.Context, serviceID string) ([]*lifecycle.Resource, error) {
	recs, err := r.s.List(ctx, BucketResources, serviceID+"|")
	if err != nil {
		return nil, err
	}
	return r.resources.decode(r.keys, serviceID, recs)
}

// Operations lists a service's operations, oldest first.
func (r *Repo) Operations(ctx context.Context, serviceID string) ([]*lifecycle.Operation, error) {
	recs, err := r.s.List(ctx, BucketOperations, serviceID+"|")
	if err != nil {
		return nil, err
	}
	return decodeOperations(recs)
}

// Operation reads one operation.
func (r *Repo) Operation(ctx context.Context, serviceID, opID string) (*lifecycle.Operation, error) {
	rec, err := r.s.Get(ctx, BucketOperations, serviceID+"|"+opID)
	if err != nil {
		return nil, translate(fmt.Errorf("operation %s: %w", opID, err))
	}
	return decodeOperation(rec)
}

// UnfinishedOperations lists every operation not yet done, of any service.
func (r *Repo) UnfinishedOperations(ctx context.Context) ([]*lifecycle.Operation, error) {
	recs, err := r.s.List(ctx, BucketOperations, "")
	if err != nil {
		return nil, err
	}
	ops, err := decodeOperations(recs)
	if err != nil {
		return nil, err
	}
	out := ops[:0]
	for _, op := range ops {
		if !op.Done() {
			out = append(out, op)
		}
	}
	return out, nil
}

// Catalog lists registered versions, of one name or of all when name is "".
func (r *Repo) Catalog(ctx context.Context, name string) (out []*lifecycle.CatalogEntry, err error) {
	prefix := ""
	var gen uint64
	if name != "" {
		prefix = name + "|"
		var hit bool
		var cached []*lifecycle.CatalogEntry
		if cached, gen, hit = r.catalogs.get(name); hit {
			return cached, nil
		}
		defer func() {
			if err == nil {
				r.catalogs.put(name, gen, out)
			}
		}()
	}
	recs, err := r.s.List(ctx, BucketCatalog, prefix)
	if err != nil {
		return nil, err
	}
	out = make([]*lifecycle.CatalogEntry, 0, len(recs))
	for _, rec := range recs {
		var e lifecycle.CatalogEntry
		if err := json.Unmarshal(rec.Value, &e); err != nil {
			return nil, fmt.Errorf("decode catalog entry %s: %w", rec.Key, err)
		}
		e.Revision = rec.Revision
		out = append(out, &e)
	}
	return out, nil
}

// Inventory reads the platform inventory; an empty one when never set. It
// is stored as the generated message's JSON (protojson), the format the
// REST surface and --inventory-file use.
func (r *Repo) Inventory(ctx context.Context) (*lifecycle.Inventory, error) {
	rec, err := r.s.Get(ctx, BucketPlatform, keyInventory)
	if errors.Is(err, store.ErrNotFound) {
		return &lifecycle.Inventory{}, nil
	}
	if err != nil {
		return nil, err
	}
	inv := &commonv1.Inventory{}
	if err := protojson.Unmarshal(rec.Value, inv); err != nil {
		return nil, fmt.Errorf("decode inventory: %w", err)
	}
	return wire.Inventory(inv), nil
}

type tx struct {
	stx     store.Tx
	written map[string]*lifecycle.Service
	keys    *seal.Keyring
	// cached returns the cache's copy of a service at a store revision.
	cached func(id string, revision int64) *lifecycle.Service
	// catalogNames are the package names whose catalog entries were written.
	catalogNames []string
	// resources keeps decoded resource records (resmemo.go).
	resources *resourceMemo
}

// Service reads a service in the transaction. The record's revision is
// read from the store; when the cache (or this transaction's own write)
// holds that revision, its copy is cloned instead of decoding the record:
// a service with thousands of pre-check results is a large document, and
// every step and progress write of an operation reads it.
func (t *tx) Service(id string) (*lifecycle.Service, error) {
	rec, err := t.stx.Get(BucketServices, id)
	if err != nil {
		return nil, translate(fmt.Errorf("service %s: %w", id, err))
	}
	if w := t.written[id]; w != nil && w.Revision == rec.Revision {
		return w.Clone(), nil
	}
	if t.cached != nil {
		if svc := t.cached(id, rec.Revision); svc != nil {
			return svc, nil
		}
	}
	return decodeService(t.keys, rec)
}

// cachedAt clones the cached service when it is at revision.
func (r *Repo) cachedAt(id string, revision int64) *lifecycle.Service {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if svc, ok := r.services[id]; ok && svc.Revision == revision {
		return svc.Clone()
	}
	return nil
}

func (t *tx) PutService(svc *lifecycle.Service) error {
	raw, err := encodeService(t.keys, svc)
	if err != nil {
		return err
	}
	expect := svc.Revision
	if expect == 0 {
		expect = store.MustNotExist
	}
	if t.keys == nil {
		// Value layers stored in the clear: the next Reseal must scan again.
		if err := t.stx.Delete(BucketPlatform, keySealedBy, store.AnyRevision); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	rev, err := t.stx.Put(BucketServices, svc.ID, raw, expect)
	if err != nil {
		return translate(fmt.Errorf("service %s: %w", svc.ID, err))
	}
	svc.Revision = rev
	t.written[svc.ID] = svc.Clone()
	return nil
}

func (t *tx) DeleteService(id string) error {
	if err := t.stx.Delete(BucketServices, id, store.AnyRevision); err != nil {
		return translate(err)
	}
	recs, err := t.stx.List(BucketResources, id+"|")
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if err := t.stx.Delete(BucketResources, rec.Key, store.AnyRevision); err != nil {
			return err
		}
	}
	if err := t.stx.Delete(BucketPlatform, planKey(id), store.AnyRevision); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	t.written[id] = nil
	t.resources.forget(id)
	return nil
}

func (t *tx) Resources(serviceID string) ([]*lifecycle.Resource, error) {
	recs, err := t.stx.List(BucketResources, serviceID+"|")
	if err != nil {
		return nil, err
	}
	return t.resources.decode(t.keys, serviceID, recs)
}

func (t *tx) PutResource(res *lifecycle.Resource) error {
	raw, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode resource %s: %w", res.ID, err)
	}
	key := res.ServiceID + "|" + res.ID
	if raw, err = sealResource(t.keys, res, key, raw); err != nil {
		return err
	}
	if t.keys == nil && sealed(res) {
		// A Secret stored in the clear: the next Reseal must scan again.
		if err := t.stx.Delete(BucketPlatform, keySealedBy, store.AnyRevision); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	_, err = t.stx.Put(BucketResources, key, raw, store.AnyRevision)
	return err
}

func (t *tx) DeleteResource(serviceID, id string) error {
	return t.stx.Delete(BucketResources, serviceID+"|"+id, store.AnyRevision)
}

func (t *tx) Operation(serviceID, opID string) (*lifecycle.Operation, error) {
	rec, err := t.stx.Get(BucketOperations, serviceID+"|"+opID)
	if err != nil {
		return nil, translate(fmt.Errorf("operation %s: %w", opID, err))
	}
	return decodeOperation(rec)
}

func (t *tx) Operations(serviceID string) ([]*lifecycle.Operation, error) {
	recs, err := t.stx.List(BucketOperations, serviceID+"|")
	if err != nil {
		return nil, err
	}
	return decodeOperations(recs)
}

func (t *tx) PutOperation(op *lifecycle.Operation) error {
	raw, err := json.Marshal(op)
	if err != nil {
		return fmt.Errorf("encode operation %s: %w", op.ID, err)
	}
	rev, err := t.stx.Put(BucketOperations, op.ServiceID+"|"+op.ID, raw, store.AnyRevision)
	if err != nil {
		return err
	}
	op.Revision = rev
	return nil
}

func (t *tx) PutCatalog(e *lifecycle.CatalogEntry) error {
	raw, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode catalog entry: %w", err)
	}
	t.catalogNames = append(t.catalogNames, e.Name)
	_, err = t.stx.Put(BucketCatalog, e.Name+"|"+e.Version, raw, store.AnyRevision)
	return err
}

func (t *tx) Catalog(name string) ([]*lifecycle.CatalogEntry, error) {
	recs, err := t.stx.List(BucketCatalog, name+"|")
	if err != nil {
		return nil, err
	}
	out := make([]*lifecycle.CatalogEntry, 0, len(recs))
	for _, rec := range recs {
		var e lifecycle.CatalogEntry
		if err := json.Unmarshal(rec.Value, &e); err != nil {
			return nil, err
		}
		out = append(out, &e)
	}
	return out, nil
}

func (t *tx) PutInventory(inv *lifecycle.Inventory) error {
	raw, err := protojson.Marshal(wire.InventoryProto(inv))
	if err != nil {
		return fmt.Errorf("encode inventory: %w", err)
	}
	_, err = t.stx.Put(BucketPlatform, keyInventory, raw, store.AnyRevision)
	return err
}

func decodeOperation(rec store.Record) (*lifecycle.Operation, error) {
	var op lifecycle.Operation
	if err := json.Unmarshal(rec.Value, &op); err != nil {
		return nil, fmt.Errorf("decode operation %s: %w", rec.Key, err)
	}
	op.Revision = rec.Revision
	return &op, nil
}

func decodeOperations(recs []store.Record) ([]*lifecycle.Operation, error) {
	out := make([]*lifecycle.Operation, 0, len(recs))
	for _, rec := range recs {
		op, err := decodeOperation(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, op)
	}
	// Keys are "<service>|<time-ordered id>": store order is start order
	// within a service; across services order by start time.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].StartedAt.Equal(out[j].StartedAt) {
			return strings.Compare(out[i].ID, out[j].ID) < 0
		}
		return out[i].StartedAt.Before(out[j].StartedAt)
	})
	return out, nil
}

func translate(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lifecycle.ErrNotFound), errors.Is(err, lifecycle.ErrConflict):
		return err
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %w", err, lifecycle.ErrNotFound)
	case errors.Is(err, store.ErrConflict):
		return fmt.Errorf("%w: %w", err, lifecycle.ErrConflict)
	}
	return err
}
