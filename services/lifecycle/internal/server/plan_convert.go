package server

import (
	"google.golang.org/protobuf/types/known/structpb"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/reads"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/wire"
)

func planProto(p *reads.UpgradePlan) *lifecyclev1.UpgradePlan {
	out := &lifecyclev1.UpgradePlan{
		FromVersion: p.FromVersion, ToVersion: p.ToVersion, Allowed: p.Allowed, Compatibility: wire.CheckResultsProto(p.Compatibility),
		ConfigurationErrors: p.ConfigurationErrors, SuggestedPath: p.SuggestedPath, BlockingReasons: p.BlockingReasons,
		PlanId: p.PlanID, ExpiresAt: rfc3339(p.ExpiresAt),
		AcceptanceRequired: p.Acceptance.Required, AccessGrantsDiff: grantsDiffProto(p.Acceptance),
	}
	if p.Acceptance.Grants != nil {
		if g, err := structpb.NewStruct(p.Acceptance.Grants); err == nil {
			out.AccessGrants = g
		}
	}
	if p.Strategy != nil {
		out.RolloutStrategy = p.Strategy.Name
	}
	if p.Hook != nil {
		out.Hook = &lifecyclev1.HookReport{Configured: p.Hook.Configured, Endpoint: p.Hook.Endpoint, Results: wire.CheckResultsProto(p.Hook.Results),
			Failure: p.Hook.Failure, Blocked: p.Hook.Blocked}
	}
	if p.Dynamic != nil {
		out.DynamicChecks = &commonv1.PreCheckReport{PreCheckStatus: p.Dynamic.Status, ResourceChecks: wire.ResourceChecksProto(p.Dynamic.ResourceChecks)}
	}
	for _, r := range p.Resources {
		out.Resources = append(out.Resources, &lifecyclev1.ResourcePlanEntry{Type: r.Type, Name: r.Name, Supervisor: r.Supervisor, Action: r.Action,
			CurrentYaml: r.CurrentYAML, PlannedYaml: r.PlannedYAML})
	}
	for _, t := range p.Targets {
		out.Targets = append(out.Targets, targetPlanProto(t))
	}
	return out
}

// targetPlanProto converts a fleet plan's line. Its resources carry type,
// name and action: their YAML is in the plan's resources already, and a
// plan over 1,000 Supervisors would otherwise carry it twice.
func targetPlanProto(t reads.TargetPlan) *lifecyclev1.TargetPlan {
	out := &lifecyclev1.TargetPlan{Supervisor: t.Supervisor, Region: t.Region, Wave: int32(t.Wave + 1), WaveName: t.WaveName,
		WindowOpens: rfc3339(t.WindowOpens), Allowed: t.Allowed, Compatibility: wire.CheckResultsProto(t.Compatibility),
		Hook: wire.CheckResultsProto(t.Hook), BlockingReasons: t.BlockingReasons}
	for _, r := range t.Resources {
		out.Resources = append(out.Resources, &lifecyclev1.ResourcePlanEntry{Type: r.Type, Name: r.Name, Supervisor: r.Supervisor, Action: r.Action})
	}
	return out
}
