package reads

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// PreviewRequest is what an upgrade plan is asked for: the target (a
// source, a registered version, or the newest registered one) and, for a
// fleet plan, the rollout (nil: the service's or the provider's default
// strategy, if any).
type PreviewRequest struct {
	ID, Source, TargetVersion string
	Rollout                   *lifecycle.RolloutRequest
}

// TargetPlan is what a fleet rollout would do on one Supervisor: the wave
// it lands in, when its window opens, its checks (the hook's as a dry run)
// and its resources.
type TargetPlan struct {
	Supervisor, Region string
	Wave               int // 0-based
	WaveName           string
	WindowOpens        time.Time // zero: open now, or no window
	Allowed            bool
	Compatibility      []lifecycle.CheckResult
	Hook               []lifecycle.CheckResult
	Resources          []PlanEntry
	BlockingReasons    []string
}

func (t *TargetPlan) block(reason string) {
	t.Allowed = false
	t.BlockingReasons = append(t.BlockingReasons, reason)
}

// resolveStrategy is the rollout a plan lays out: the request's, else the
// service's named one, else the provider's default; nil for all at once.
func (p *Previews) resolveStrategy(ctx context.Context, svc *lifecycle.Service, req *lifecycle.RolloutRequest) (*lifecycle.RolloutStrategy, error) {
	stored, err := p.ports.Repo.RolloutStrategies(ctx)
	if err != nil {
		return nil, err
	}
	return fleet.Resolve(req, svc.RolloutStrategy, stored)
}

// fleetSupervisors are the Supervisors a rollout covers: those the
// service runs on at either version (rendered, or holding a resource of
// the plan).
func fleetSupervisors(rend *steps.Rendered, entries []PlanEntry) []string {
	sups := slices.Clone(rend.Supervisors())
	for _, e := range entries {
		if e.Supervisor != "" && !slices.Contains(sups, e.Supervisor) {
			sups = append(sups, e.Supervisor)
		}
	}
	return sups
}

// fleetTargets adds a line per Supervisor of sups (fleetSupervisors) to
// plan, laid out in waves as the rollout would, each with its
// compatibility verdict, its hook's answer (hooks, asked once for the
// whole plan), its resources and its maintenance window at now. A check
// that cannot run for a Supervisor blocks that Supervisor's line, and so
// the plan; a version the signature policy refuses blocks every line.
func (p *Previews) fleetTargets(ctx context.Context, plan *UpgradePlan, sups []string, u *planVersions, rend *steps.Rendered, hooks map[string]*lifecycle.HookReport) error {
	inv, err := p.ports.Repo.Inventory(ctx)
	if err != nil {
		return err
	}
	s := plan.Strategy
	waves, err := fleet.Assign(s, inv, sups)
	if err != nil {
		plan.block("rollout: " + err.Error())
		return nil
	}
	verdicts, err := steps.CompatibilityBySupervisor(ctx, p.ports.Repo, p.ports.Peers.Compatibility,
		steps.PackageVersion(u.ob, u.svc.Version, u.svc.BuiltIn), steps.PackageVersion(u.nb, u.to, u.svc.BuiltIn), rend)
	if err != nil {
		if errors.Is(err, lifecycle.ErrUnavailable) {
			return err
		}
		plan.block("compatibility: " + err.Error())
		verdicts = &steps.SupervisorVerdicts{}
	}
	// A compatibility service that did not answer for some Supervisors
	// leaves their verdicts unknown, not blocked: the plan is unavailable,
	// as the rollout's gate would wait for it.
	for _, sup := range sups {
		if ferr := verdicts.Failed[sup]; errors.Is(ferr, lifecycle.ErrUnavailable) {
			return ferr
		}
	}
	region, window := map[string]string{}, map[string]*lifecycle.MaintenanceWindow{}
	for _, r := range inv.RegionList() {
		for _, sv := range r.Supervisors {
			region[sv.Name], window[sv.Name] = r.Name, sv.Window
		}
	}
	now := p.ports.Now()
	for wi, members := range waves {
		for _, sup := range members {
			t := TargetPlan{Supervisor: sup, Region: region[sup], Wave: wi, WaveName: fleet.Name(s, wi), Allowed: true}
			fillTarget(&t, verdicts, hooks[sup])
			if sig := u.signature; sig != nil {
				t.Compatibility = append(slices.Clip(t.Compatibility), *sig)
				t.block("signature policy: " + sig.Message)
			}
			if open, opens, err := fleet.Open(window[sup], now); err != nil {
				t.block(err.Error())
			} else if !open {
				t.WindowOpens = opens
			}
			for _, e := range plan.Resources {
				if e.Supervisor == sup {
					t.Resources = append(t.Resources, e)
				}
			}
			if !t.Allowed {
				plan.block("Supervisor " + sup + ": " + strings.Join(t.BlockingReasons, "; "))
			}
			plan.Targets = append(plan.Targets, t)
		}
	}
	return nil
}

// fillTarget records a Supervisor's compatibility results and hook answer;
// an ERROR in either blocks it.
func fillTarget(t *TargetPlan, v *steps.SupervisorVerdicts, hook *lifecycle.HookReport) {
	if err := v.Failed[t.Supervisor]; err != nil {
		t.block("compatibility: " + err.Error())
	}
	t.Compatibility = v.Results[t.Supervisor]
	for _, r := range t.Compatibility {
		if strings.EqualFold(r.Severity, "ERROR") {
			t.block("compatibility: " + r.Message)
		}
	}
	if hook == nil {
		return
	}
	t.Hook = hook.Results
	if hook.Failure != "" {
		t.block("pre-check hook: " + hook.Failure)
	}
	for _, r := range hook.Results {
		if strings.EqualFold(r.Severity, "ERROR") {
			t.block("pre-check hook: " + r.Message)
		}
	}
}
