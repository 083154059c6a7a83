package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vcfsm/vcfsm/platform/seal"
	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// SealSecrets makes the repository encrypt Secret resources (their
// rendered data) at rest with keys; call before use.
func (r *Repo) SealSecrets(keys *seal.Keyring) { r.keys = keys }

// sealed reports which resources are encrypted at rest.
func sealed(res *lifecycle.Resource) bool { return res.Kind == "Secret" }

func sealResource(keys *seal.Keyring, res *lifecycle.Resource, key string, raw []byte) ([]byte, error) {
	if keys == nil || !sealed(res) {
		return raw, nil
	}
	out, err := keys.Seal(raw, []byte(key))
	if err != nil {
		return nil, fmt.Errorf("seal resource %s: %w", res.ID, err)
	}
	return out, nil
}

// openRecord returns a record's plain value and the key that sealed it
// ("" for a plain record).
func openRecord(keys *seal.Keyring, rec store.Record) ([]byte, string, error) {
	if !seal.IsSealed(rec.Value) {
		return rec.Value, "", nil
	}
	if keys == nil {
		return nil, "", fmt.Errorf("resource %s is encrypted at rest and no encryption key is configured (--encryption-key-file)", rec.Key)
	}
	plain, id, err := keys.Open(rec.Value, []byte(rec.Key))
	if err != nil {
		return nil, id, fmt.Errorf("resource %s: %w", rec.Key, err)
	}
	return plain, id, nil
}

// resealBatch bounds the records one Reseal transaction rewrites (etcd's
// --max-txn-ops is 128 by default).
const resealBatch = 100

// Reseal rewrites every Secret resource not sealed by the primary key:
// plain ones (encryption just turned on, or an older store) and ones
// sealed by an older key (after a rotation). It returns how many it
// rewrote. Resources are scanned read-only and only services with something to re-seal are
// written: a start with ten thousand services must not commit ten
// thousand transactions.
func (r *Repo) Reseal(ctx context.Context) (int, error) {
	if r.keys == nil {
		return 0, nil
	}
	// Once every Secret is sealed by the primary key the scan is not
	// repeated at each start: the marker names the key it was done for.
	if rec, err := r.s.Get(ctx, BucketPlatform, keySealedBy); err == nil && string(rec.Value) == r.keys.Primary() {
		return 0, nil
	}
	n, err := r.reseal(ctx)
	if err != nil {
		return n, err
	}
	err = r.s.Update(ctx, func(stx store.Tx) error {
		_, err := stx.Put(BucketPlatform, keySealedBy, []byte(r.keys.Primary()), store.AnyRevision)
		return err
	})
	return n, err
}

// keySealedBy (platform bucket) names the key every Secret was last
// re-sealed with.
const keySealedBy = "sealed-by"

func (r *Repo) reseal(ctx context.Context) (int, error) {
	n := 0
	for _, svc := range r.Services(ctx) {
		recs, err := r.s.List(ctx, BucketResources, svc.ID+"|")
		if err != nil {
			return n, fmt.Errorf("re-seal the Secrets of %s: %w", svc.ID, err)
		}
		var stale []store.Record
		for _, rec := range recs {
			res, err := r.staleSeal(rec)
			if err != nil {
				return n, fmt.Errorf("re-seal the Secrets of %s: %w", svc.ID, err)
			}
			if res != nil {
				stale = append(stale, rec)
			}
		}
		// At most resealBatch records per transaction (etcd's
		// --max-txn-ops); a restart in between finds the rest still stale.
		for len(stale) > 0 {
			batch := stale[:min(resealBatch, len(stale))]
			stale = stale[len(batch):]
			done, err := r.resealRecords(ctx, batch)
			n += done
			if err != nil {
				return n, fmt.Errorf("re-seal the Secrets of %s: %w", svc.ID, err)
			}
		}
	}
	return n, nil
}

// resealRecords seals the given records again with the primary key, in one
// transaction, re-reading each (another writer may have sealed or removed
// it since the scan).
func (r *Repo) resealRecords(ctx context.Context, stale []store.Record) (int, error) {
	done := 0
	err := r.Update(ctx, func(ltx lifecycle.Tx) error {
		done = 0
		t := ltx.(*tx)
		for _, old := range stale {
			rec, err := t.stx.Get(BucketResources, old.Key)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			res, err := r.staleSeal(rec)
			if err != nil {
				return err
			}
			if res == nil {
				continue
			}
			if err := t.PutResource(res); err != nil {
				return err
			}
			done++
		}
		return nil
	})
	return done, err
}

// staleSeal returns the resource a record holds when it must be sealed
// again (nil otherwise). Plain records of kinds that are not sealed are
// told apart by their kind alone, without decoding the whole resource.
func (r *Repo) staleSeal(rec store.Record) (*lifecycle.Resource, error) {
	if !seal.IsSealed(rec.Value) {
		var kind struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(rec.Value, &kind); err != nil {
			return nil, fmt.Errorf("decode resource %s: %w", rec.Key, err)
		}
		if !sealed(&lifecycle.Resource{Kind: kind.Kind}) {
			return nil, nil
		}
	}
	plain, id, err := openRecord(r.keys, rec)
	if err != nil {
		return nil, err
	}
	if id == r.keys.Primary() {
		return nil, nil
	}
	var res lifecycle.Resource
	if err := json.Unmarshal(plain, &res); err != nil {
		return nil, fmt.Errorf("decode resource %s: %w", rec.Key, err)
	}
	return &res, nil
}
