package fleet

import (
	"slices"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// SharedWave is the wave a resource that is not on one Supervisor moves
// (and is rolled back) with: a region-linked one with the first wave that
// takes a Supervisor of its region, a vCenter's with the first wave that
// takes a Supervisor of that vCenter, and every other one (VCF Automation
// roles, UI plugins, service accounts) with the first wave that moves
// anything — the canary. So a moved Supervisor never lacks what its
// version needs elsewhere, and the rollback takes it back last.
func SharedWave(r *lifecycle.Resource, waves [][]string, inv *lifecycle.Inventory) int {
	regionOf := map[string]string{}
	vcenterOf := map[string]string{}
	for _, reg := range inv.RegionList() {
		for _, sv := range reg.Supervisors {
			regionOf[sv.Name] = reg.Name
			vcenterOf[sv.Name] = sv.VCenterName
		}
	}
	first := func(match func(sup string) bool) int {
		for i, w := range waves {
			if slices.ContainsFunc(w, match) {
				return i
			}
		}
		return -1
	}
	if r.Region != "" {
		if i := first(func(s string) bool { return regionOf[s] == r.Region }); i >= 0 {
			return i
		}
	}
	if r.Target.System == target.SystemVCenter && r.Target.Scope != "" {
		if i := first(func(s string) bool { return vcenterOf[s] == r.Target.Scope }); i >= 0 {
			return i
		}
	}
	if i := first(func(string) bool { return true }); i >= 0 {
		return i
	}
	return 0
}

// WaveOf is the wave a resource moves with: its Supervisor's, or (not on
// one Supervisor) its shared wave.
func WaveOf(r *lifecycle.Resource, st *lifecycle.RolloutState) int {
	if r.Supervisor == "" {
		return st.Shared[r.ID]
	}
	for _, t := range st.Targets {
		if t.Supervisor == r.Supervisor {
			return t.Wave
		}
	}
	return -1
}

// NewState lays a rollout out: its waves and targets, every target at the
// installed version and Pending, and the wave each shared resource moves
// with.
func NewState(s *lifecycle.RolloutStrategy, waves [][]string, inv *lifecycle.Inventory, shared []*lifecycle.Resource, from, to string) *lifecycle.RolloutState {
	regionOf := map[string]string{}
	for _, reg := range inv.RegionList() {
		for _, sv := range reg.Supervisors {
			regionOf[sv.Name] = reg.Name
		}
	}
	st := &lifecycle.RolloutState{Strategy: *s, FromVersion: from, ToVersion: to, State: lifecycle.RolloutRunning, Shared: map[string]int{}}
	for i, w := range waves {
		st.Waves = append(st.Waves, lifecycle.WaveState{Name: Name(s, i), State: "Pending", Targets: len(w)})
		for _, sup := range w {
			st.Targets = append(st.Targets, lifecycle.TargetState{Supervisor: sup, Region: regionOf[sup], Wave: i, Version: from, State: lifecycle.TargetPending})
		}
	}
	for _, r := range shared {
		if r.Supervisor == "" {
			st.Shared[r.ID] = SharedWave(r, waves, inv)
		}
	}
	return st
}

// Summary is what the service record shows of a rollout.
func Summary(opID string, st *lifecycle.RolloutState) *lifecycle.RolloutSummary {
	sum := &lifecycle.RolloutSummary{OperationID: opID, ToVersion: st.ToVersion, State: st.State, Wave: st.Wave, Waves: len(st.Waves), Total: len(st.Targets)}
	for _, t := range st.Targets {
		switch t.State {
		case lifecycle.TargetDone, lifecycle.TargetRolledBack:
			sum.Done++
		case lifecycle.TargetFailed, lifecycle.TargetBlocked:
			sum.Failed++
		case lifecycle.TargetWaitingWindow:
			sum.Waiting++
		}
	}
	return sum
}

// GateTimeout is the strategy's bound on a moved target's way to Healthy.
func GateTimeout(s *lifecycle.RolloutStrategy) time.Duration {
	if s.GateTimeout > 0 {
		return s.GateTimeout
	}
	return DefaultGateTimeout
}
