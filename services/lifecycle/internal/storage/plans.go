package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// A service's stored upgrade plan lives in the platform bucket under
// "plan/<service id>": one per service, so stored plans are bounded by the
// services, and deleting a service deletes its plan. The plan holds no
// values (only versions, the strategy and fingerprints): nothing to seal.
func planKey(serviceID string) string { return "plan/" + serviceID }

// Plan reads a service's stored upgrade plan.
func (r *Repo) Plan(ctx context.Context, serviceID string) (*lifecycle.StoredPlan, error) {
	rec, err := r.s.Get(ctx, BucketPlatform, planKey(serviceID))
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("service %s has no stored upgrade plan: %w", serviceID, lifecycle.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	var p lifecycle.StoredPlan
	if err := json.Unmarshal(rec.Value, &p); err != nil {
		return nil, fmt.Errorf("decode the upgrade plan of service %s: %w", serviceID, err)
	}
	return &p, nil
}

func (t *tx) PutPlan(p *lifecycle.StoredPlan) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode upgrade plan %s: %w", p.ID, err)
	}
	_, err = t.stx.Put(BucketPlatform, planKey(p.ServiceID), raw, store.AnyRevision)
	return err
}
