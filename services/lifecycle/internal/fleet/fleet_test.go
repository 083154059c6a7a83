package fleet

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

func inventory() *lifecycle.Inventory {
	return &lifecycle.Inventory{
		Regions: []lifecycle.Region{
			{Name: "us-west", Supervisors: []lifecycle.Supervisor{
				{Name: "sv-w1", VCenterName: "vc-w", Labels: map[string]string{"tier": "canary"}},
				{Name: "sv-w2", VCenterName: "vc-w"},
			}},
			{Name: "eu", Supervisors: []lifecycle.Supervisor{
				{Name: "sv-e1", VCenterName: "vc-e", Labels: map[string]string{"tier": "canary"}},
				{Name: "sv-e2", VCenterName: "vc-e"},
			}},
		},
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name, want string
		s          lifecycle.RolloutStrategy
	}{
		{"no waves", "at least one wave", lifecycle.RolloutStrategy{}},
		{"selects nothing", "waves[0]: select its Supervisors", lifecycle.RolloutStrategy{Waves: []lifecycle.Wave{{}}}},
		{"rest and a selection", "waves[0]: a wave is either rest", lifecycle.RolloutStrategy{Waves: []lifecycle.Wave{{Rest: true, Regions: []string{"eu"}}}}},
		{"two rests", "waves[1]: only one wave may be rest", lifecycle.RolloutStrategy{Waves: []lifecycle.Wave{{Rest: true}, {Rest: true}}}},
		{"bad policy", `waves[0].onFailure "retry"`, lifecycle.RolloutStrategy{Waves: []lifecycle.Wave{{Rest: true, OnFailure: "retry"}}}},
		{"negative budget", "must not be negative", lifecycle.RolloutStrategy{Waves: []lifecycle.Wave{{Rest: true, MaxFailures: -1}}}},
		{"duplicate names", `waves[1].name "a"`, lifecycle.RolloutStrategy{Waves: []lifecycle.Wave{{Name: "a", Rest: true}, {Name: "a", Regions: []string{"eu"}}}}},
		{"valid", "", lifecycle.RolloutStrategy{Waves: []lifecycle.Wave{{Supervisors: []string{"sv-w1"}, Approval: true}, {Rest: true, OnFailure: "pause"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Validate(&c.s)
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, lifecycle.ErrInvalidArgument)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestAssign(t *testing.T) {
	all := []string{"sv-e1", "sv-e2", "sv-w1", "sv-w2"}
	s := &lifecycle.RolloutStrategy{Waves: []lifecycle.Wave{
		{Labels: map[string]string{"tier": "canary"}},
		{Regions: []string{"us-west"}},
		{Rest: true},
	}}
	waves, err := Assign(s, inventory(), all)
	require.NoError(t, err)
	require.Equal(t, [][]string{{"sv-e1", "sv-w1"}, {"sv-w2"}, {"sv-e2"}}, waves, "first wave that selects a Supervisor takes it; rest takes the remainder")

	s = &lifecycle.RolloutStrategy{Waves: []lifecycle.Wave{{Supervisors: []string{"sv-w1"}}}}
	_, err = Assign(s, inventory(), all)
	require.ErrorIs(t, err, lifecycle.ErrInvalidArgument)
	require.ErrorContains(t, err, "no wave takes Supervisor(s) sv-e1, sv-e2, sv-w2")
}

func TestResolve(t *testing.T) {
	inv := &lifecycle.RolloutStrategies{Strategies: []lifecycle.RolloutStrategy{{Name: "careful", Waves: []lifecycle.Wave{{Rest: true}}}}}
	inline := &lifecycle.RolloutStrategy{Waves: []lifecycle.Wave{{Rest: true}}}
	got, err := Resolve(&lifecycle.RolloutRequest{Strategy: inline}, "careful", inv)
	require.NoError(t, err)
	require.Empty(t, got.Name, "the request's own strategy wins")
	got, err = Resolve(nil, "careful", inv)
	require.NoError(t, err)
	require.Equal(t, "careful", got.Name)
	got, err = Resolve(nil, "", inv)
	require.NoError(t, err)
	require.Nil(t, got, "no strategy anywhere: the spec's all-at-once upgrade")
	inv.Default = "careful"
	got, err = Resolve(nil, "", inv)
	require.NoError(t, err)
	require.Equal(t, "careful", got.Name, "the provider's default")
	got, err = Resolve(&lifecycle.RolloutRequest{None: true}, "careful", inv)
	require.NoError(t, err)
	require.Nil(t, got, "a request may still ask for none")
	_, err = Resolve(&lifecycle.RolloutRequest{Name: "nope"}, "", inv)
	require.ErrorContains(t, err, `rollout strategy "nope", which the provider has not defined`)
}

func TestMaintenanceWindow(t *testing.T) {
	w := &lifecycle.MaintenanceWindow{Days: []string{"Sat"}, Start: "22:00", Duration: 4 * time.Hour, TimeZone: "Europe/Berlin"}
	require.NoError(t, lifecycle.ValidateWindow(w, "w"))
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	sat := time.Date(2026, 12, 5, 23, 0, 0, 0, berlin) // a Saturday
	cases := []struct {
		name     string
		now      time.Time
		open     bool
		nextOpen time.Time
	}{
		{"inside", sat, true, time.Time{}},
		{"after midnight, still open", sat.Add(2 * time.Hour), true, time.Time{}},
		{"closed again", sat.Add(4 * time.Hour), false, time.Date(2026, 12, 12, 22, 0, 0, 0, berlin)},
		{"before it opens", sat.Add(-2 * time.Hour), false, time.Date(2026, 12, 5, 22, 0, 0, 0, berlin)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			open, next, err := Open(w, c.now)
			require.NoError(t, err)
			require.Equal(t, c.open, open)
			require.True(t, next.Equal(c.nextOpen), "next opening %s, want %s", next, c.nextOpen)
		})
	}
	open, _, err := Open(nil, sat)
	require.NoError(t, err)
	require.True(t, open, "no window: always open")
	require.ErrorContains(t, lifecycle.ValidateWindow(&lifecycle.MaintenanceWindow{Start: "25:00", Duration: time.Hour, TimeZone: "UTC"}, "inventory.regions[0].supervisors[1].maintenanceWindow"), "supervisors[1].maintenanceWindow.start")
	require.ErrorContains(t, lifecycle.ValidateWindow(&lifecycle.MaintenanceWindow{Start: "01:00", Duration: time.Hour, TimeZone: "Mars/Olympus"}, "w"), "timeZone")
}

func TestSharedWave(t *testing.T) {
	waves := [][]string{{"sv-e1"}, {"sv-w1", "sv-w2"}, {"sv-e2"}}
	inv := inventory()
	require.Equal(t, 1, SharedWave(&lifecycle.Resource{Region: "us-west"}, waves, inv), "region-linked: first wave with a Supervisor of the region")
	require.Equal(t, 1, SharedWave(&lifecycle.Resource{Target: target.Key{System: target.SystemVCenter, Scope: "vc-w"}}, waves, inv), "vCenter's: first wave with a Supervisor of that vCenter")
	require.Equal(t, 0, SharedWave(&lifecycle.Resource{Target: target.Key{System: target.SystemVCFA}}, waves, inv), "VCF Automation's: the canary")
	require.Equal(t, 1, SharedWave(&lifecycle.Resource{Target: target.Key{System: target.SystemVCFA}}, [][]string{{}, {"sv-w1"}}, inv), "the first wave that moves anything")
}
