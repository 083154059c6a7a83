package lifecycle

import (
	"fmt"
	"slices"
	"strings"
)

// allowed is seed 002's transition table.
var allowed = map[string][]string{
	StateInactive:       {StateActive, StateDecommissioned},
	StateActive:         {StateInactive, StatePaused, StateDecommissioned},
	StatePaused:         {StateActive, StateDecommissioned},
	StateDecommissioned: {},
}

// ValidState reports a known lifecycle state.
func ValidState(s string) bool {
	_, ok := allowed[s]
	return ok
}

// CheckTransition says whether a service may move from one lifecycle state
// to another through PUT or PATCH. Staying put is always allowed. Reaching
// decommissioned is allowed by the table but only through DELETE (a PUT
// asking for it is turned into a DELETE before it gets here).
func CheckTransition(from, to string) error {
	if !ValidState(to) {
		return fmt.Errorf("lifecycleState %q: want one of active, inactive, paused, decommissioned: %w", to, ErrInvalidArgument)
	}
	if from == to {
		return nil
	}
	next := allowed[from]
	if to == StateDecommissioned && slices.Contains(next, to) {
		return fmt.Errorf("cannot set lifecycleState %s -> decommissioned with PATCH: use DELETE /v2/vcf-services/{id}: %w", from, ErrInvalidTransition)
	}
	if !slices.Contains(next, to) {
		return fmt.Errorf("cannot move lifecycleState %s -> %s: from %s the allowed transitions are %s: %w",
			from, to, from, describe(from, next), ErrInvalidTransition)
	}
	return nil
}

func describe(from string, next []string) string {
	var out []string
	for _, n := range next {
		if n == StateDecommissioned {
			out = append(out, "decommissioned (via DELETE)")
		} else {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none (" + from + " is terminal)"
	}
	return strings.Join(out, ", ")
}
