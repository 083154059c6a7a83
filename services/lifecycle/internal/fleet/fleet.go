// Package fleet holds the rules of a rollout, as pure functions over the
// domain's values: which wave each Supervisor falls in, which wave the
// resources that are not on one Supervisor move with, when a maintenance
// window is open, and whether a strategy is valid. The rollout operation
// (internal/ops/rollout*.go) runs them; nothing here does I/O.
package fleet

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// DefaultGateTimeout bounds a target's way to Healthy once moved.
const DefaultGateTimeout = 10 * time.Minute

// maxWaves keeps a strategy readable (and its journal small).
const maxWaves = 64

// Validate checks a strategy; the error names the wave and the field.
func Validate(s *lifecycle.RolloutStrategy) error {
	if s == nil {
		return nil
	}
	if len(s.Waves) == 0 {
		return invalid("rollout: a strategy needs at least one wave")
	}
	if len(s.Waves) > maxWaves {
		return invalid("rollout: %d waves, at most %d", len(s.Waves), maxWaves)
	}
	if s.GateTimeout < 0 {
		return invalid("rollout.gateTimeout %s: must not be negative", s.GateTimeout)
	}
	rest := -1
	names := map[string]bool{}
	for i, w := range s.Waves {
		at := fmt.Sprintf("rollout.waves[%d]", i)
		if w.Name != "" {
			if names[w.Name] {
				return invalid("%s.name %q: wave names must be unique", at, w.Name)
			}
			names[w.Name] = true
		}
		selects := len(w.Regions) > 0 || len(w.Supervisors) > 0 || len(w.Labels) > 0
		switch {
		case w.Rest && selects:
			return invalid("%s: a wave is either rest: true or selects by regions, supervisors or labels, not both", at)
		case w.Rest && rest >= 0:
			return invalid("%s: only one wave may be rest: true (waves[%d] is)", at, rest)
		case w.Rest:
			rest = i
		case !selects:
			return invalid("%s: select its Supervisors by regions, supervisors or labels, or set rest: true", at)
		}
		if w.MaxConcurrent < 0 || w.MaxFailures < 0 || w.Soak < 0 {
			return invalid("%s: maxConcurrent, maxFailures and soak must not be negative", at)
		}
		switch w.OnFailure {
		case "", lifecycle.OnFailureRollback, lifecycle.OnFailurePause:
		default:
			return invalid("%s.onFailure %q: want rollback (the default) or pause", at, w.OnFailure)
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, lifecycle.ErrInvalidArgument)...)
}

// Name is a wave's name, or its position.
func Name(s *lifecycle.RolloutStrategy, i int) string {
	if i < len(s.Waves) && s.Waves[i].Name != "" {
		return s.Waves[i].Name
	}
	return fmt.Sprintf("wave-%d", i+1)
}

// Assign puts each Supervisor the service runs on into the first wave that
// selects it (a rest wave takes what no selecting wave took). A Supervisor
// no wave takes is an error naming it: a rollout must move every target,
// so the service is back to one version when it ends.
func Assign(s *lifecycle.RolloutStrategy, inv *lifecycle.Inventory, supervisors []string) ([][]string, error) {
	byName := map[string]lifecycle.Supervisor{}
	regionOf := map[string]string{}
	for _, r := range inv.RegionList() {
		for _, sv := range r.Supervisors {
			byName[sv.Name] = sv
			regionOf[sv.Name] = r.Name
		}
	}
	waves := make([][]string, len(s.Waves))
	var orphans []string
	for _, name := range supervisors {
		i := slices.IndexFunc(s.Waves, func(w lifecycle.Wave) bool {
			return !w.Rest && selects(w, byName[name], name, regionOf[name])
		})
		if i < 0 {
			i = slices.IndexFunc(s.Waves, func(w lifecycle.Wave) bool { return w.Rest })
		}
		if i < 0 {
			orphans = append(orphans, name)
			continue
		}
		waves[i] = append(waves[i], name)
	}
	if len(orphans) > 0 {
		sort.Strings(orphans)
		return nil, invalid("rollout: no wave takes Supervisor(s) %s: add them to a wave, or add a wave with rest: true", strings.Join(orphans, ", "))
	}
	for _, w := range waves {
		sort.Strings(w)
	}
	return waves, nil
}

func selects(w lifecycle.Wave, sv lifecycle.Supervisor, name, region string) bool {
	if slices.Contains(w.Supervisors, name) || slices.Contains(w.Regions, region) {
		return true
	}
	if len(w.Labels) == 0 {
		return false
	}
	for k, v := range w.Labels {
		if sv.Labels[k] != v {
			return false
		}
	}
	return true
}

// Resolve picks the strategy of an upgrade: the request's own (inline or
// named), else the service's named one, else the provider's default; nil
// means the spec's all-at-once upgrade.
func Resolve(req *lifecycle.RolloutRequest, serviceStrategy string, stored *lifecycle.RolloutStrategies) (*lifecycle.RolloutStrategy, error) {
	if stored == nil {
		stored = &lifecycle.RolloutStrategies{}
	}
	named := func(name, who string) (*lifecycle.RolloutStrategy, error) {
		for i := range stored.Strategies {
			if stored.Strategies[i].Name == name {
				s := stored.Strategies[i]
				return &s, nil
			}
		}
		return nil, invalid("%s names rollout strategy %q, which the provider has not defined (PUT /v2/rollout-strategies)", who, name)
	}
	switch {
	case req != nil && req.None:
		return nil, nil
	case req != nil && req.Strategy != nil:
		s := *req.Strategy
		return &s, Validate(&s)
	case req != nil && req.Name != "":
		return named(req.Name, "the upgrade")
	case serviceStrategy != "":
		return named(serviceStrategy, "the service")
	case stored.Default != "":
		return named(stored.Default, "the provider's default rollout")
	}
	return nil, nil
}

// ValidateStrategies checks the provider's strategies: each valid and
// named once, the default one of them.
func ValidateStrategies(s *lifecycle.RolloutStrategies) error {
	names := map[string]bool{}
	for i := range s.Strategies {
		st := &s.Strategies[i]
		if st.Name == "" {
			return invalid("strategies[%d].name is required", i)
		}
		if names[st.Name] {
			return invalid("strategies[%d].name %q appears twice", i, st.Name)
		}
		names[st.Name] = true
		if err := Validate(st); err != nil {
			return fmt.Errorf("strategies[%d] (%s): %w", i, st.Name, err)
		}
	}
	if s.Default != "" && !names[s.Default] {
		return invalid("default %q is none of the strategies", s.Default)
	}
	return nil
}
