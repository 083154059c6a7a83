package storage

import (
	"context"
	"encoding/json"
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

// Reseal rewrites every Secret resource not sealed by the primary key:
// plain ones (encryption just turned on) and ones sealed by an older key
// (after a rotation). It returns how many it rewrote.
func (r *Repo) Reseal(ctx context.Context) (int, error) {
	if r.keys == nil {
		return 0, nil
	}
	n := 0
	for _, svc := range r.Services(ctx) {
		err := r.Update(ctx, func(ltx lifecycle.Tx) error {
			t := ltx.(*tx)
			recs, err := t.stx.List(BucketResources, svc.ID+"|")
			if err != nil {
				return err
			}
			for _, rec := range recs {
				plain, id, err := openRecord(r.keys, rec)
				if err != nil {
					return err
				}
				var res lifecycle.Resource
				if err := json.Unmarshal(plain, &res); err != nil {
					return fmt.Errorf("decode resource %s: %w", rec.Key, err)
				}
				if !sealed(&res) || id == r.keys.Primary() {
					continue
				}
				if err := t.PutResource(&res); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return n, fmt.Errorf("re-seal the Secrets of %s: %w", svc.ID, err)
		}
	}
	return n, nil
}
