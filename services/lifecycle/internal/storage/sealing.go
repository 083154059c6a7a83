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

// SealSecrets makes the repository seal at rest with keys (sealed.go);
// call before use, then Refresh: the service cache was read with the keys
// it had.
func (r *Repo) SealSecrets(keys *seal.Keyring) {
	r.keys = keys
	// What was decoded with the old keys is not kept: a key taken away
	// must stop opening its records.
	r.resources.reset()
}

// sealed reports which resources are encrypted at rest: all of them. A
// Secret holds secrets by definition, and every other kind is rendered
// from the service's values, any of which may be one.
func sealed(*lifecycle.Resource) bool { return true }

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
		return nil, "", fmt.Errorf("%s is encrypted at rest and no encryption key is configured (--encryption-key-file)", rec.Key)
	}
	plain, id, err := keys.Open(rec.Value, []byte(rec.Key))
	if err != nil {
		return nil, id, fmt.Errorf("%s: %w", rec.Key, err)
	}
	return plain, id, nil
}

// resealBatch bounds the records one Reseal transaction rewrites (etcd's
// --max-txn-ops is 128 by default).
const resealBatch = 100

// Reseal rewrites every sealed record not sealed by the primary key:
// plain ones (encryption just turned on, or an older store) and ones
// sealed by an older key (after a rotation): services' value layers and
// resources. It returns how many it rewrote. Records are scanned
// read-only and only what is stale is written: a start with ten thousand
// services must not commit ten thousand transactions. It runs while the
// service serves (the old keys still open what is not re-sealed yet);
// writers racing it are fine: each record is re-read in the transaction
// that re-seals it.
func (r *Repo) Reseal(ctx context.Context) (int, error) {
	if r.keys == nil {
		return 0, nil
	}
	// Once everything is sealed by the primary key the scan is not
	// repeated at each start: the marker names the key it was done for.
	if rec, err := r.s.Get(ctx, BucketPlatform, keySealedBy); err == nil && string(rec.Value) == r.keys.Primary() {
		return 0, nil
	}
	n, err := resealer{r}.reseal(ctx)
	if err != nil {
		return n, err
	}
	err = r.s.Update(ctx, func(stx store.Tx) error {
		_, err := stx.Put(BucketPlatform, keySealedBy, []byte(r.keys.Primary()), store.AnyRevision)
		return err
	})
	return n, err
}

// keySealedBy (platform bucket) names the key every record was last
// re-sealed with. (Its name changed when value layers and every resource
// kind came to be sealed, not only Secrets: a store marked by the older
// marker is scanned again.)
const keySealedBy = "sealed-all-by"

// resealer re-seals a repository's records (Reseal's scan and writes).
type resealer struct{ r *Repo }

func (x resealer) reseal(ctx context.Context) (int, error) {
	n := 0
	for _, svc := range x.r.Services(ctx) {
		done, err := x.resealService(ctx, svc.ID)
		n += done
		if err != nil {
			return n, fmt.Errorf("re-seal service %s: %w", svc.ID, err)
		}
		recs, err := x.r.s.List(ctx, BucketResources, svc.ID+"|")
		if err != nil {
			return n, fmt.Errorf("re-seal the resources of %s: %w", svc.ID, err)
		}
		var stale []store.Record
		for _, rec := range recs {
			res, err := x.staleSeal(rec)
			if err != nil {
				return n, fmt.Errorf("re-seal the resources of %s: %w", svc.ID, err)
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
			done, err := x.resealRecords(ctx, batch)
			n += done
			if err != nil {
				return n, fmt.Errorf("re-seal the resources of %s: %w", svc.ID, err)
			}
		}
	}
	return n, nil
}

// resealService seals a service's value layers again when they are not
// sealed by the primary key; 1 when it did.
func (x resealer) resealService(ctx context.Context, id string) (int, error) {
	rec, err := x.r.s.Get(ctx, BucketServices, id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if stale, err := x.staleService(rec); err != nil || !stale {
		return 0, err
	}
	done := 0
	err = x.r.Update(ctx, func(ltx lifecycle.Tx) error {
		done = 0
		t := ltx.(*tx)
		rec, err := t.stx.Get(BucketServices, id)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if stale, err := x.staleService(rec); err != nil || !stale {
			return err
		}
		svc, err := decodeService(x.r.keys, rec)
		if err != nil {
			return err
		}
		done = 1
		return t.PutService(svc)
	})
	return done, err
}

// staleService reports a service record whose value layers are not sealed
// by the primary key.
func (x resealer) staleService(rec store.Record) (bool, error) {
	_, sealedBy, err := decodeSealedService(x.r.keys, rec)
	if err != nil {
		return false, err
	}
	for _, id := range sealedBy {
		if id != x.r.keys.Primary() {
			return true, nil
		}
	}
	return false, nil
}

// resealRecords seals the given records again with the primary key, in one
// transaction, re-reading each (another writer may have sealed or removed
// it since the scan).
func (x resealer) resealRecords(ctx context.Context, stale []store.Record) (int, error) {
	done := 0
	err := x.r.Update(ctx, func(ltx lifecycle.Tx) error {
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
			res, err := x.staleSeal(rec)
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
func (x resealer) staleSeal(rec store.Record) (*lifecycle.Resource, error) {
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
	plain, id, err := openRecord(x.r.keys, rec)
	if err != nil {
		return nil, err
	}
	if id == x.r.keys.Primary() {
		return nil, nil
	}
	var res lifecycle.Resource
	if err := json.Unmarshal(plain, &res); err != nil {
		return nil, fmt.Errorf("decode resource %s: %w", rec.Key, err)
	}
	return &res, nil
}
