package storage

import (
	"context"
	"strings"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// follower is a store that reports every committed change of a bucket,
// whichever process made it (etcdstore).
type follower interface {
	FollowProgress(ctx context.Context, bucket string, reset func([]store.Record), change func(etcdstore.Change), p etcdstore.Progress) error
}

// The repository follows the store for the write path (commit.Feed, held
// to in app, the composition root) and counts catalog generations.
var _ lifecycle.CatalogGenerations = (*Repo)(nil)

// CanFollow reports whether the store reports other replicas' changes.
func (r *Repo) CanFollow() bool {
	_, ok := store.Unwrap(r.s).(follower)
	return ok
}

// Follow keeps the service cache in step with the store, whoever writes,
// and reports every service change to changed (deleted: svc is nil) until
// ctx ends. A store that cannot follow returns at once.
func (r *Repo) Follow(ctx context.Context, changed func(id string, svc *lifecycle.Service)) error {
	f, ok := store.Unwrap(r.s).(follower)
	if !ok {
		return nil
	}
	// Other replicas register versions too: their catalog writes drop
	// what this replica's catalog cache holds of those packages.
	catalogDone := make(chan struct{})
	go func() {
		defer close(catalogDone)
		_ = f.FollowProgress(ctx, BucketCatalog, func([]store.Record) {
			r.catalogs.drop("") // (re)connected: changes may have been missed
		}, func(c etcdstore.Change) {
			name, _, _ := strings.Cut(c.Key, "|")
			r.catalogs.drop(name)
		}, etcdstore.Progress{})
	}()
	defer func() { <-catalogDone }()
	return f.FollowProgress(ctx, BucketServices, func(recs []store.Record) {
		r.reset(recs, changed)
	}, func(c etcdstore.Change) {
		if c.Deleted {
			r.apply(c.Key, nil, changed)
			return
		}
		svc, err := decodeService(r.keys, c.Record)
		if err != nil {
			return // a record this version cannot read stays as it was
		}
		r.apply(c.Key, svc, changed)
	}, etcdstore.Progress{Reached: r.view.reached, Request: r.view.requests()})
}

// reset replaces the cache with a full listing and reports what differs
// (changes missed while the watch was down).
func (r *Repo) reset(recs []store.Record, changed func(string, *lifecycle.Service)) {
	fresh := make(map[string]*lifecycle.Service, len(recs))
	for _, rec := range recs {
		if svc, err := decodeService(r.keys, rec); err == nil {
			fresh[svc.ID] = svc
		}
	}
	r.mu.Lock()
	old := r.services
	r.services = fresh
	r.snapshot.forget()
	r.mu.Unlock()
	for id, svc := range fresh {
		if o, ok := old[id]; !ok || o.Revision != svc.Revision {
			changed(id, svc.Clone())
		}
	}
	for id := range old {
		if _, ok := fresh[id]; !ok {
			changed(id, nil)
		}
	}
}

// apply records one change unless the cache already holds a newer
// revision (this replica's own commit, written through first).
func (r *Repo) apply(id string, svc *lifecycle.Service, changed func(string, *lifecycle.Service)) {
	r.mu.Lock()
	cur, ok := r.services[id]
	switch {
	case svc == nil:
		delete(r.services, id)
	case ok && cur.Revision > svc.Revision:
		r.mu.Unlock()
		return
	default:
		r.services[id] = svc
	}
	r.snapshot.touch(id)
	r.mu.Unlock()
	if svc == nil {
		changed(id, nil)
		return
	}
	changed(id, svc.Clone())
}
