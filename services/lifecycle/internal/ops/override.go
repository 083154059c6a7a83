package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Overrides: an administrator may let one upgrade through the ERROR
// results of its compatibility check and pre-check hook, giving a reason
// (compatibility.md: an ERROR blocks "unless the user overrides"). Who may
// is the server's auth table (platform/auth, fieldPermissions); here the
// override is validated, journaled on the operation it starts, and
// applied. Each ERROR it lets through is kept in the operation's override
// record (history) and in the service's progress (state), and noted as a
// WARNING naming who overrode and why. Signature failures are never
// overridden: they are refused before any check runs.

// validateOverride checks an override's reason.
func validateOverride(o *lifecycle.Override, upgrading bool) error {
	if o == nil {
		return nil
	}
	if strings.TrimSpace(o.Reason) == "" {
		return fmt.Errorf("override.reason: required: say why the check ERRORs of this upgrade may be overridden (it is recorded in the history): %w", lifecycle.ErrInvalidArgument)
	}
	if !upgrading {
		return fmt.Errorf("override goes with a source (an upgrade): it lets that one upgrade through the ERRORs of its compatibility check and pre-check hook: %w", lifecycle.ErrInvalidArgument)
	}
	return nil
}

// newOverride is the record an upgrade starts with.
func newOverride(o *lifecycle.Override, by string, now time.Time) *lifecycle.Override {
	if o == nil {
		return nil
	}
	return &lifecycle.Override{Principal: by, Reason: strings.TrimSpace(o.Reason), At: now}
}

// overrideErrors lets the ERROR results through when the operation
// carries an override: each is recorded and turned into a WARNING that
// says who overrode it and why.
func overrideErrors(ctx context.Context, d *Deps, r *run, results []lifecycle.CheckResult) ([]lifecycle.CheckResult, error) {
	o := r.op.Override
	if o == nil {
		return results, nil
	}
	out := make([]lifecycle.CheckResult, 0, len(results))
	changed := false
	for _, res := range results {
		if strings.EqualFold(res.Severity, lifecycle.SeverityError) {
			if !slices.Contains(o.Results, res) {
				o.Results = append(o.Results, res)
				changed = true
			}
			res.Severity = "WARNING"
			res.Message = fmt.Sprintf("%s (ERROR overridden by %s: %s)", res.Message, o.Principal, o.Reason)
		}
		out = append(out, res)
	}
	if !changed {
		return out, nil
	}
	shown := *o
	shown.Results = slices.Clone(o.Results)
	err := d.Writer.PutOperation(ctx, r.op, func(svc *lifecycle.Service) bool {
		if svc.ActiveOperation != r.op.ID || svc.Progress == nil {
			return false
		}
		svc.Progress.Override = &shown
		return true
	})
	return out, err
}

// builtInRecord is what a builtIn create or registration records: an
// administrator declared the version compatible by default (seed 002).
func builtInRecord(by string, now time.Time) *lifecycle.Override {
	return &lifecycle.Override{Principal: by, At: now,
		Reason: "builtIn: declared a built-in service, compatible by default; its compatibility constraints are not evaluated"}
}
