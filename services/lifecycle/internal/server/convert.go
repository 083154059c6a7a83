package server

import (
	"encoding/base64"
	"fmt"
	"maps"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/reads"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/wire"
)

// toProto is a service as the REST surface shows it; it fails when the
// accepted access grants cannot be shown as JSON.
func toProto(svc *lifecycle.Service) (*lifecyclev1.VcfService, error) {
	grants, err := structOf(svc.Accepted.AccessGrants)
	if err != nil {
		return nil, fmt.Errorf("show the accepted access grants of service %s: %w", svc.ID, err)
	}
	return &lifecyclev1.VcfService{
		Id:             svc.ID,
		Vendor:         svc.Vendor,
		Name:           svc.Name,
		Version:        svc.Version,
		Source:         svc.Source,
		Status:         svc.Status,
		LifecycleState: svc.LifecycleState,
		Phase:          svc.Phase,
		Values: &lifecyclev1.OverlayValues{
			PlatformOverlay: svc.Values.PlatformOverlay,
			VendorOverlay:   svc.Values.VendorOverlay,
			UserOverwrite:   svc.Values.UserOverwrite,
			Effective:       svc.Values.Effective,
		},
		Accepted: &lifecyclev1.Accepted{
			Eula:         svc.Accepted.EULA,
			Signatures:   svc.Accepted.Signatures,
			AccessGrants: grants,
		},
		Reconfigure:     reconfigureOf(svc.Reconfigure),
		Labels:          nonNil(svc.Labels),
		Locations:       nonNil(svc.Locations),
		Tenants:         nonNil(svc.Tenants),
		AutoUpgrade:     svc.AutoUpgrade,
		AutoRollback:    svc.AutoRollback,
		BuiltIn:         svc.BuiltIn,
		Namespace:       svc.Namespace,
		Revision:        svc.Revision,
		CreatedAt:       rfc3339(svc.CreatedAt),
		UpdatedAt:       rfc3339(svc.UpdatedAt),
		Rollout:         rolloutSummaryProto(svc.Rollout),
		RolloutStrategy: svc.RolloutStrategy,

		AutoUpgradePrereleases: svc.AutoUpgradePrereleases,
	}, nil
}

func reconfigureOf(events []string) *lifecyclev1.Reconfigure {
	if events == nil {
		return nil
	}
	return &lifecyclev1.Reconfigure{Events: events}
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// structOf converts a JSON object; a value JSON cannot hold (which the
// domain never stores, but a bug could) is an error, not an empty object.
func structOf(m map[string]any) (*structpb.Struct, error) {
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	return s, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func stateProto(v *reads.StateView) *lifecyclev1.State {
	st := &lifecyclev1.State{
		Resources:    []*lifecyclev1.ResourceInfo{},
		ErrorDetails: []*lifecyclev1.ErrorDetail{},
	}
	for _, r := range v.Resources {
		st.Resources = append(st.Resources, &lifecyclev1.ResourceInfo{
			Type: r.Kind, Name: r.Name, Namespace: r.Namespace, Status: r.Status, Message: r.Message,
			LastModified: rfc3339(r.LastModified), Region: r.Region, Supervisor: r.Supervisor,
			LogicalName: r.Name, OwnerVersion: r.OwnerVersion, Finalizers: r.Finalizers,
			ResourceYaml: resourceYAML(r),
		})
	}
	for _, d := range v.ErrorDetails {
		st.ErrorDetails = append(st.ErrorDetails, &lifecyclev1.ErrorDetail{Type: d.Type, Severity: d.Severity, Message: d.Message})
	}
	if v.PreCheck != nil {
		st.PreCheckStatus = v.PreCheck.Status
		st.ResourceChecks = wire.ResourceChecksProto(v.PreCheck.ResourceChecks)
	}
	st.Operation = progressProto(v.Progress)
	for _, o := range v.Orphans {
		st.OrphanedResources = append(st.OrphanedResources, &lifecyclev1.ResourceInfo{
			Type: o.Kind, Name: o.Name, Namespace: o.Target.Scope, Status: "Orphaned", Message: o.Message + " (target " + o.Target.String() + ")",
		})
	}
	st.Rollout = rolloutProto(v.Rollout)
	return st
}

func operationProto(op *lifecycle.Operation) *lifecyclev1.Operation {
	p := &lifecyclev1.Operation{
		Id: op.ID, Type: op.Type, FromVersion: op.FromVersion, ToVersion: op.ToVersion, Outcome: op.Outcome,
		RequestedBy: op.RequestedBy, StartedAt: rfc3339(op.StartedAt), FinishedAt: rfc3339(op.FinishedAt),
		Override: overrideProto(op.Override),
	}
	for _, s := range op.Steps {
		p.Steps = append(p.Steps, &lifecyclev1.OperationStep{Name: s.Name, Status: s.Status, Message: s.Message,
			StartedAt: rfc3339(s.StartedAt), FinishedAt: rfc3339(s.FinishedAt)})
	}
	for _, d := range op.Notes {
		p.Notes = append(p.Notes, &lifecyclev1.ErrorDetail{Type: d.Type, Severity: d.Severity, Message: d.Message})
	}
	for _, o := range op.Orphans {
		p.Steps = append(p.Steps, &lifecyclev1.OperationStep{Name: "orphaned " + o.Kind + " " + o.Name, Status: "Orphaned",
			Message: o.Message + " (target " + o.Target.String() + ")"})
	}
	return p
}

func catalogProto(e *lifecycle.CatalogEntry) *lifecyclev1.ServiceVersion {
	return &lifecyclev1.ServiceVersion{Name: e.Name, Version: e.Version, Source: e.Source, Digest: e.Digest, Status: e.Status,
		Message: e.Message, RegisteredAt: rfc3339(e.RegisteredAt), BuiltIn: e.BuiltIn, Quarantine: quarantineProto(e.Quarantine),
		BuiltInBy: overrideProto(e.BuiltInBy)}
}

func supervisorCheckProto(c *steps.SupervisorVerdict) *lifecyclev1.CheckSupervisorUpgradeResponse {
	out := &lifecyclev1.CheckSupervisorUpgradeResponse{Supervisor: c.Supervisor, TargetVersion: c.TargetVersion, Blocked: c.Blocked,
		Services: []*lifecyclev1.ServiceCompatibility{}}
	for _, v := range c.Services {
		out.Services = append(out.Services, &lifecyclev1.ServiceCompatibility{Id: v.ID, Name: v.Name, Version: v.Version, Blocked: v.Blocked, Results: wire.CheckResultsProto(v.Results)})
	}
	return out
}

// progressProto converts an operation's progress; nil stays nil.
func progressProto(p *lifecycle.Progress) *lifecyclev1.OperationProgress {
	if p == nil {
		return nil
	}
	return &lifecyclev1.OperationProgress{Id: p.OperationID, Type: p.Type, Step: p.Step, Message: p.Message, Percent: int32(p.Percent), Outcome: p.Outcome,
		Override: overrideProto(p.Override)}
}

// overrideProto converts an override record; nil stays nil.
func overrideProto(o *lifecycle.Override) *lifecyclev1.OverrideRecord {
	if o == nil {
		return nil
	}
	return &lifecyclev1.OverrideRecord{Principal: o.Principal, Reason: o.Reason, At: rfc3339(o.At), Results: wire.CheckResultsProto(o.Results)}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// grantsDiffProto is how the new version's access grants differ from the
// accepted ones.
func grantsDiffProto(a steps.Acceptance) *lifecyclev1.AccessGrantsDiff {
	out := &lifecyclev1.AccessGrantsDiff{}
	for _, g := range a.Added {
		out.Added = append(out.Added, &lifecyclev1.AccessGrantValue{Category: g.Category, Key: g.Key, Value: g.Value})
	}
	for _, g := range a.Removed {
		out.Removed = append(out.Removed, &lifecyclev1.AccessGrantValue{Category: g.Category, Key: g.Key, Value: g.Value})
	}
	return out
}

// resourceYAML is api.md's ResourceInfo.resourceYaml: the custom resource
// as the Service Manager applies it, for debugging. A Secret's values are
// never shown (its keys are); nil when the record holds no document.
func resourceYAML(r *lifecycle.Resource) *string {
	if len(r.Doc) == 0 {
		return nil
	}
	doc := r.Doc
	if r.Kind == "Secret" {
		doc = maps.Clone(r.Doc)
		for _, field := range []string{"data", "stringData"} {
			if m, ok := doc[field].(map[string]any); ok {
				hidden := make(map[string]any, len(m))
				for k := range m {
					hidden[k] = redacted
				}
				doc[field] = hidden
			}
		}
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil
	}
	s := string(out)
	return &s
}
