package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// bucketMoves counts, per object, the writes that handed it to another
// version of its owning service (an Apply or a Transfer whose owner
// version differs from the one the object had; creating or adopting an
// object counts as a move to its first version). They are kept in the
// same transaction as the object, in the simulator's file, so they
// survive the lifecycle process being killed: the crash tests read them
// to check each target moved exactly once each way. Idempotent
// re-applies at the same version are not moves; a delete is a move to
// Removed.
const bucketMoves = "moves"

// Removed is the version Moves counts deletes under.
const Removed = "(removed)"

// countMove records that k moved from version from to version to.
func countMove(tx store.Tx, k target.Key, from, to string) error {
	if from == to {
		return nil
	}
	counts := map[string]int{}
	rec, err := tx.Get(bucketMoves, k.String())
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(rec.Value, &counts); err != nil {
			return fmt.Errorf("decode the moves of %s: %w", k, err)
		}
	}
	counts[to]++
	raw, err := json.Marshal(counts)
	if err != nil {
		return err
	}
	_, err = tx.Put(bucketMoves, k.String(), raw, store.AnyRevision)
	return err
}

// Moves returns, per object (its Key.String()), how many times it was
// handed to each version of its owner, ever (deleted objects included).
func (s *Simulator) Moves(ctx context.Context) (map[string]map[string]int, error) {
	recs, err := s.st.List(ctx, bucketMoves, "")
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]int, len(recs))
	for _, rec := range recs {
		counts := map[string]int{}
		if err := json.Unmarshal(rec.Value, &counts); err != nil {
			return nil, fmt.Errorf("decode the moves of %s: %w", rec.Key, err)
		}
		out[rec.Key] = counts
	}
	return out, nil
}
