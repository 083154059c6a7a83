package ops

import (
	"context"
	"fmt"
	"maps"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// History types of what administrators ask of a rollout.
const (
	OpRolloutApprove = "rollout-approve"
	OpRolloutPause   = "rollout-pause"
	OpRolloutResume  = "rollout-resume"
	OpRolloutAbort   = "rollout-abort"
)

// RolloutAction is what an administrator asks of a running rollout.
type RolloutAction struct {
	// Type is one of the OpRollout… history types.
	Type string
	// Reason: why (abort), or the override of a blocked wave's checks
	// (approve).
	Reason      string
	RequestedBy string
}

// ActOnRollout records an approval, pause, resume or abort on the
// service's running rollout (in its history, with who asked) and wakes
// the rollout so it acts at once. Roles are the edge's: approve and abort
// are an administrator's.
func (r *Runner) ActOnRollout(ctx context.Context, id string, a RolloutAction) (*lifecycle.Service, error) {
	if err := lifecycle.CheckID(id); err != nil {
		return nil, err
	}
	var opID string
	svc, err := r.d.Writer.Mutate(ctx, id, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		c := s.RolloutControl
		if c == nil || s.ActiveOperation == "" || c.OperationID != s.ActiveOperation {
			return fmt.Errorf("service %s has no rollout running (%s): %w", id, describeLast(s), lifecycle.ErrFailedPrecondition)
		}
		c = c.Clone()
		if err := actOn(c, s, a); err != nil {
			return err
		}
		c.By = a.RequestedBy
		s.RolloutControl = c
		opID = c.OperationID
		recordInstant(&r.d, s, a.Type, a.RequestedBy)
		if a.Reason != "" {
			last := s.PendingHistory[len(s.PendingHistory)-1]
			last.Steps = []lifecycle.Step{{Name: a.Type, Status: lifecycle.StepSucceeded, Message: a.Reason}}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.engine.Enqueue(engine.Key{Service: id, Operation: opID})
	return svc, nil
}

// actOn applies one action to the rollout's controls.
func actOn(c *lifecycle.RolloutControl, s *lifecycle.Service, a RolloutAction) error {
	switch a.Type {
	case OpRolloutApprove:
		wave := 0
		if s.Rollout != nil {
			wave = s.Rollout.Wave
		}
		c.Approved = maps.Clone(c.Approved)
		if c.Approved == nil {
			c.Approved = map[int]string{}
		}
		c.Approved[wave] = nonEmptyStr(a.RequestedBy, "an administrator")
		if strings.TrimSpace(a.Reason) != "" {
			if c.Overridden == nil {
				c.Overridden = map[int]string{}
			}
			c.Overridden[wave] = a.Reason
		}
	case OpRolloutPause:
		c.Paused = true
	case OpRolloutResume:
		c.Paused = false
		c.Resumes++
	case OpRolloutAbort:
		if c.Aborted {
			return fmt.Errorf("the rollout of service %s is being aborted already: %w", s.ID, lifecycle.ErrConflict)
		}
		c.Aborted = true
	default:
		return fmt.Errorf("unknown rollout action %q: %w", a.Type, lifecycle.ErrInvalidArgument)
	}
	return nil
}

// describeLast says how the service's last rollout stands, for refusals.
func describeLast(s *lifecycle.Service) string {
	if s.Rollout == nil {
		return "it never rolled out"
	}
	return fmt.Sprintf("its last rollout, to %s, is %s", s.Rollout.ToVersion, s.Rollout.State)
}

// QuarantineVersion marks a registered version quarantined (q set) or
// clears it (q nil).
func (r *Runner) QuarantineVersion(ctx context.Context, name, version string, q *lifecycle.Quarantine) (*lifecycle.CatalogEntry, error) {
	if name == "" || version == "" {
		return nil, fmt.Errorf("name and version are required: %w", lifecycle.ErrInvalidArgument)
	}
	if q != nil {
		q.At = r.d.Now()
		if strings.TrimSpace(q.Reason) == "" {
			return nil, fmt.Errorf("reason is required: say why the version is quarantined: %w", lifecycle.ErrInvalidArgument)
		}
	}
	if err := quarantine(ctx, r.d, name, version, q); err != nil {
		return nil, err
	}
	entries, err := r.d.Repo.Catalog(ctx, name)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Version == version {
			if q == nil {
				if err := r.unblock(ctx, name, version); err != nil {
					return nil, err
				}
			}
			return e, nil
		}
	}
	return nil, fmt.Errorf("version %s of %s is not registered: %w", version, name, lifecycle.ErrNotFound)
}

// unblock: a cleared version may be picked again. Services that failed on
// it or were rolled back from it (UpgradeBlockedFor) forget that, and every
// service of the package looks again.
func (r *Runner) unblock(ctx context.Context, name, version string) error {
	for _, svc := range r.d.Repo.Services(ctx) {
		if svc.Name != name {
			continue
		}
		if svc.UpgradeBlockedFor == version {
			_, err := r.d.Writer.Mutate(ctx, svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
				if s.UpgradeBlockedFor == version {
					s.UpgradeBlockedFor = ""
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		r.d.Kick(svc.ID)
	}
	return nil
}

// PutRolloutStrategies replaces the provider's rollout strategies.
func (r *Runner) PutRolloutStrategies(ctx context.Context, s *lifecycle.RolloutStrategies) error {
	if err := fleet.ValidateStrategies(s); err != nil {
		return err
	}
	return r.d.Writer.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutRolloutStrategies(s) })
}
