package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// keyRolloutStrategies holds the provider's rollout strategies in the
// platform bucket (a new key: no migration).
const keyRolloutStrategies = "rollout-strategies"

// RolloutStrategies reads the provider's rollout strategies; none when
// never set.
func (r *Repo) RolloutStrategies(ctx context.Context) (*lifecycle.RolloutStrategies, error) {
	rec, err := r.s.Get(ctx, BucketPlatform, keyRolloutStrategies)
	if errors.Is(err, store.ErrNotFound) {
		return &lifecycle.RolloutStrategies{}, nil
	}
	if err != nil {
		return nil, err
	}
	var s lifecycle.RolloutStrategies
	if err := json.Unmarshal(rec.Value, &s); err != nil {
		return nil, fmt.Errorf("decode rollout strategies: %w", err)
	}
	return &s, nil
}

func (t *tx) PutRolloutStrategies(s *lifecycle.RolloutStrategies) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode rollout strategies: %w", err)
	}
	_, err = t.stx.Put(BucketPlatform, keyRolloutStrategies, raw, store.AnyRevision)
	return err
}
