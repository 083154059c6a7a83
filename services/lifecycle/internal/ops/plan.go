package ops

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// StorePlan keeps an upgrade plan as its service's plan (replacing the one
// before), gives it an id and returns it.
func (r *Runner) StorePlan(ctx context.Context, p *lifecycle.StoredPlan) (*lifecycle.StoredPlan, error) {
	p.ID = "plan-" + uuid.NewString()
	p.CreatedAt = r.d.Now()
	if err := r.d.Writer.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutPlan(p) }); err != nil {
		return nil, fmt.Errorf("store the upgrade plan of service %s: %w", p.ServiceID, err)
	}
	return p, nil
}

// applyPlan turns a change that executes a stored plan (PlanID) into the
// upgrade the plan was approved for: the plan's source and rollout. It is
// refused (ErrConflict, saying what) when the plan is not the service's
// latest, has expired, or the service, the inventory or the catalog
// changed since it was made; and when the request itself names a source or
// rollout other than the plan's.
func (r *Runner) applyPlan(ctx context.Context, current *lifecycle.Service, c *Change) error {
	id := *c.PlanID
	p, err := r.d.Repo.Plan(ctx, current.ID)
	if err != nil {
		return fmt.Errorf("planId %s: %w", id, err)
	}
	if p.ID != id {
		return fmt.Errorf("planId %s is not service %s's stored plan (its latest is %s): %w", id, current.ID, p.ID, lifecycle.ErrConflict)
	}
	if age := r.d.Now().Sub(p.CreatedAt); age > lifecycle.PlanTTL {
		return fmt.Errorf("plan %s expired (made %s ago; a plan is good for %s): make a new one: %w", id, age.Round(1e9), lifecycle.PlanTTL, lifecycle.ErrConflict)
	}
	inv, err := r.d.Repo.Inventory(ctx)
	if err != nil {
		return err
	}
	catalog, err := r.d.Repo.Catalog(ctx, current.Name)
	if err != nil {
		return err
	}
	if changed := p.Basis.Changes(fleet.Basis(current, inv, catalog)); len(changed) > 0 {
		return fmt.Errorf("plan %s is out of date: changed since it was made: %s; make a new plan: %w", id, strings.Join(changed, ", "), lifecycle.ErrConflict)
	}
	if c.Source != nil && *c.Source != "" && *c.Source != p.Source {
		return fmt.Errorf("source %s differs from plan %s's (%s): leave it out or make a new plan: %w", *c.Source, id, p.Source, lifecycle.ErrConflict)
	}
	if c.Rollout != nil {
		if !sameStrategy(c.Rollout.Strategy, p.Strategy) || c.Rollout.Name != "" || c.Rollout.None != (p.Strategy == nil) {
			return fmt.Errorf("rollout differs from plan %s's: leave it out or make a new plan: %w", id, lifecycle.ErrConflict)
		}
	}
	src := p.Source
	c.Source = &src
	if p.Strategy != nil {
		c.Rollout = &lifecycle.RolloutRequest{Strategy: p.Strategy}
	} else {
		c.Rollout = &lifecycle.RolloutRequest{None: true}
	}
	if c.Accepted == nil && p.Accepted != nil {
		a := *p.Accepted
		c.Accepted = &a
	}
	c.planDigest = p.Digest
	return nil
}

func sameStrategy(a, b *lifecycle.RolloutStrategy) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
