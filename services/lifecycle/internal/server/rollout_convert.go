package server

import (
	"strconv"
	"time"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/reads"
)

// The rollout messages: strategies in both directions (durations as Go
// duration text: "5m", "90s"), the rollout as it runs, its summary.

func strategyProto(s *lifecycle.RolloutStrategy) *lifecyclev1.RolloutStrategy {
	if s == nil {
		return nil
	}
	out := &lifecyclev1.RolloutStrategy{Name: s.Name, GateTimeout: durationText(s.GateTimeout)}
	for _, w := range s.Waves {
		out.Waves = append(out.Waves, &lifecyclev1.Wave{
			Name: w.Name, Regions: w.Regions, Supervisors: w.Supervisors, Labels: w.Labels, Rest: w.Rest,
			MaxConcurrent: int32(min(w.MaxConcurrent, 1<<30)), Soak: durationText(w.Soak), Approval: w.Approval, //nolint:gosec // bounded
			MaxFailures: int32(min(w.MaxFailures, 1<<30)), OnFailure: w.OnFailure, //nolint:gosec // bounded
		})
	}
	return out
}

func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// strategyFromProto reads a strategy; where names it in errors.
func strategyFromProto(p *lifecyclev1.RolloutStrategy, where string) (*lifecycle.RolloutStrategy, error) {
	if p == nil {
		return nil, nil
	}
	gate, err := parseDuration(p.GetGateTimeout(), where+".gateTimeout")
	if err != nil {
		return nil, err
	}
	out := &lifecycle.RolloutStrategy{Name: p.GetName(), GateTimeout: gate}
	for i, w := range p.GetWaves() {
		soak, err := parseDuration(w.GetSoak(), where+".waves["+itoa(i)+"].soak")
		if err != nil {
			return nil, err
		}
		out.Waves = append(out.Waves, lifecycle.Wave{
			Name: w.GetName(), Regions: w.GetRegions(), Supervisors: w.GetSupervisors(), Labels: w.GetLabels(), Rest: w.GetRest(),
			MaxConcurrent: int(w.GetMaxConcurrent()), Soak: soak, Approval: w.GetApproval(),
			MaxFailures: int(w.GetMaxFailures()), OnFailure: w.GetOnFailure(),
		})
	}
	return out, nil
}

func parseDuration(s, field string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, invalid("%s %q: want a Go duration such as 90s, 5m or 1h30m", field, truncate(s))
	}
	return d, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func itoa(i int) string { return strconv.Itoa(i) }

// rolloutRequestFromProto reads an upgrade's rollout.
func rolloutRequestFromProto(p *lifecyclev1.RolloutRequest) (*lifecycle.RolloutRequest, error) {
	if p == nil {
		return nil, nil
	}
	s, err := strategyFromProto(p.GetStrategy(), "rollout.strategy")
	if err != nil {
		return nil, err
	}
	return &lifecycle.RolloutRequest{Strategy: s, Name: p.GetName(), None: p.GetNone()}, nil
}

func strategiesProto(s *lifecycle.RolloutStrategies) *lifecyclev1.RolloutStrategies {
	out := &lifecyclev1.RolloutStrategies{Strategies: []*lifecyclev1.RolloutStrategy{}, DefaultRollout: s.Default}
	for i := range s.Strategies {
		out.Strategies = append(out.Strategies, strategyProto(&s.Strategies[i]))
	}
	return out
}

func strategiesFromProto(p *lifecyclev1.RolloutStrategies) (*lifecycle.RolloutStrategies, error) {
	out := &lifecycle.RolloutStrategies{Default: p.GetDefaultRollout()}
	for i, s := range p.GetStrategies() {
		st, err := strategyFromProto(s, "strategies["+itoa(i)+"]")
		if err != nil {
			return nil, err
		}
		out.Strategies = append(out.Strategies, *st)
	}
	return out, nil
}

func rolloutSummaryProto(s *lifecycle.RolloutSummary) *lifecyclev1.RolloutSummary {
	if s == nil {
		return nil
	}
	return &lifecyclev1.RolloutSummary{OperationId: s.OperationID, ToVersion: s.ToVersion, State: s.State, Wave: int32(min(s.Wave+1, s.Waves)), //nolint:gosec // bounded by the waves
		Waves: int32(s.Waves), Done: int32(s.Done), Failed: int32(s.Failed), WaitingForWindow: int32(s.Waiting), Total: int32(s.Total)} //nolint:gosec // counts of targets
}

func rolloutProto(v *reads.RolloutView) *lifecyclev1.Rollout {
	if v == nil || v.State == nil {
		return nil
	}
	st := v.State
	out := &lifecyclev1.Rollout{OperationId: v.OperationID, FromVersion: st.FromVersion, ToVersion: st.ToVersion, State: st.State,
		Reason: st.Reason, Wave: int32(min(st.Wave+1, len(st.Waves))), Strategy: strategyProto(&st.Strategy), Paused: v.Paused, //nolint:gosec // bounded by the waves
		Waves: []*lifecyclev1.WaveStatus{}, Targets: []*lifecyclev1.TargetStatus{}}
	for _, w := range st.Waves {
		out.Waves = append(out.Waves, &lifecyclev1.WaveStatus{Name: w.Name, State: w.State, Targets: int32(w.Targets), //nolint:gosec // a count of targets
			ApprovedBy: w.ApprovedBy, StartedAt: rfc3339(w.StartedAt), DoneAt: rfc3339(w.DoneAt)})
	}
	for _, t := range st.Targets {
		ts := &lifecyclev1.TargetStatus{Supervisor: t.Supervisor, Region: t.Region, Wave: int32(t.Wave + 1), Version: t.Version, //nolint:gosec // bounded by the waves
			State: t.State, Message: t.Message, MovedAt: rfc3339(t.MovedAt), HealthyAt: rfc3339(t.HealthyAt), WindowOpens: rfc3339(t.WindowOpens)}
		for _, n := range t.Notes {
			ts.Notes = append(ts.Notes, &lifecyclev1.RolloutNote{Severity: n.Severity, Message: n.Message})
		}
		out.Targets = append(out.Targets, ts)
	}
	return out
}

func quarantineProto(q *lifecycle.Quarantine) *lifecyclev1.Quarantine {
	if q == nil {
		return nil
	}
	return &lifecyclev1.Quarantine{Reason: q.Reason, At: rfc3339(q.At), Rollout: q.Rollout, By: q.By}
}
