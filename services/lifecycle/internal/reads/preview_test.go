package reads

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

func TestPlanResources(t *testing.T) {
	have := []*lifecycle.Resource{
		{ID: "GlobalRole//a", Kind: "GlobalRole", Name: "a", Hash: "1"},
		{ID: "GlobalRole//b", Kind: "GlobalRole", Name: "b", Hash: "1", Doc: map[string]any{"rights": []any{"x"}}},
		{ID: "Role//gone", Kind: "Role", Name: "gone", Hash: "1"},
	}
	want := []*lifecycle.Resource{
		{ID: "GlobalRole//a", Kind: "GlobalRole", Name: "a", Hash: "1"},
		{ID: "GlobalRole//b", Kind: "GlobalRole", Name: "b", Hash: "2", Doc: map[string]any{"rights": []any{"x", "y"}}},
		{ID: "RightBundle//new", Kind: "RightBundle", Name: "new", Hash: "1", Doc: map[string]any{"name": "new"}},
	}
	got := planResources(have, want)
	require.Equal(t, []PlanEntry{
		{Type: "GlobalRole", Name: "a", Action: ActionUnchanged},
		{Type: "GlobalRole", Name: "b", Action: ActionReconfigured, CurrentYAML: "rights:\n- x\n", PlannedYAML: "rights:\n- x\n- \"y\"\n"},
		{Type: "RightBundle", Name: "new", Action: ActionCreated, PlannedYAML: "name: new\n"},
		{Type: "Role", Name: "gone", Action: ActionDecommissioned},
	}, got)
}
