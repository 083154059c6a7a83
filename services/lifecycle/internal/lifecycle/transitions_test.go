package lifecycle

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Each row of seed 002's state table, plus every pair it forbids.
func TestCheckTransition(t *testing.T) {
	cases := []struct {
		from, to string
		err      error
		mentions []string
	}{
		{StateInactive, StateActive, nil, nil},
		{StateActive, StateInactive, nil, nil},
		{StateActive, StatePaused, nil, nil},
		{StatePaused, StateActive, nil, nil},
		{StateInactive, StateInactive, nil, nil},
		{StateActive, StateActive, nil, nil},
		{StateInactive, StateDecommissioned, ErrInvalidTransition, []string{"DELETE"}},
		{StateActive, StateDecommissioned, ErrInvalidTransition, []string{"DELETE"}},
		{StatePaused, StateDecommissioned, ErrInvalidTransition, []string{"DELETE"}},
		{StateInactive, StatePaused, ErrInvalidTransition, []string{"inactive -> paused", "active, decommissioned (via DELETE)"}},
		{StatePaused, StateInactive, ErrInvalidTransition, []string{"paused -> inactive", "active, decommissioned (via DELETE)"}},
		{StateDecommissioned, StateActive, ErrInvalidTransition, []string{"decommissioned -> active", "terminal"}},
		{StateDecommissioned, StateInactive, ErrInvalidTransition, []string{"terminal"}},
		{StateActive, "running", ErrInvalidArgument, []string{`"running"`}},
	}
	for _, c := range cases {
		t.Run(c.from+"->"+c.to, func(t *testing.T) {
			err := CheckTransition(c.from, c.to)
			if c.err == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, c.err)
			for _, m := range c.mentions {
				require.Contains(t, err.Error(), m)
			}
		})
	}
}
