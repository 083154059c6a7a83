package remote

import (
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	targetv1 "github.com/vcfsm/vcfsm/gen/vcfservices/target/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Specs travel as google.protobuf.Struct: JSON's types, which is what the
// simulator keeps them as anyway (numbers come back as float64).

func keyToPB(k target.Key) *targetv1.Key {
	return &targetv1.Key{System: k.System, Scope: k.Scope, Kind: k.Kind, Identity: k.Identity}
}

func keyFromPB(k *targetv1.Key) target.Key {
	return target.Key{System: k.GetSystem(), Scope: k.GetScope(), Kind: k.GetKind(), Identity: k.GetIdentity()}
}

func ownerToPB(o target.Owner) *targetv1.Owner {
	return &targetv1.Owner{ServiceId: o.ServiceID, Version: o.Version}
}

func ownerFromPB(o *targetv1.Owner) target.Owner {
	return target.Owner{ServiceID: o.GetServiceId(), Version: o.GetVersion()}
}

func specToPB(spec map[string]any) (*structpb.Struct, error) {
	if spec == nil {
		return nil, nil
	}
	s, err := structpb.NewStruct(spec)
	if err != nil {
		return nil, fmt.Errorf("spec is not JSON-like: %w", err)
	}
	return s, nil
}

func specFromPB(s *structpb.Struct) map[string]any {
	if s == nil {
		return nil
	}
	return s.AsMap()
}

func desiredToPB(d target.Desired) (*targetv1.Desired, error) {
	spec, err := specToPB(d.Spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Key, err)
	}
	return &targetv1.Desired{Key: keyToPB(d.Key), Namespace: d.Namespace, Spec: spec, Owner: ownerToPB(d.Owner), Finalizers: d.Finalizers}, nil
}

func desiredFromPB(d *targetv1.Desired) target.Desired {
	return target.Desired{Key: keyFromPB(d.GetKey()), Namespace: d.GetNamespace(), Spec: specFromPB(d.GetSpec()),
		Owner: ownerFromPB(d.GetOwner()), Finalizers: d.GetFinalizers()}
}

func objectToPB(o target.Object) (*targetv1.Object, error) {
	spec, err := specToPB(o.Spec)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Key, err)
	}
	return &targetv1.Object{Key: keyToPB(o.Key), Namespace: o.Namespace, Spec: spec, Owner: ownerToPB(o.Owner),
		Finalizers: o.Finalizers, Status: o.Status, Message: o.Message, Adopted: o.Adopted, ExternalId: o.ExternalID,
		Generation: o.Generation, UpdatedAt: timestamppb.New(o.UpdatedAt), ReadyConditions: o.ReadyConditions}, nil
}

func objectFromPB(o *targetv1.Object) target.Object {
	obj := target.Object{Key: keyFromPB(o.GetKey()), Namespace: o.GetNamespace(), Spec: specFromPB(o.GetSpec()),
		Owner: ownerFromPB(o.GetOwner()), Finalizers: o.GetFinalizers(), Status: o.GetStatus(), Message: o.GetMessage(),
		Adopted: o.GetAdopted(), ExternalID: o.GetExternalId(), Generation: o.GetGeneration(), ReadyConditions: o.GetReadyConditions()}
	if o.GetUpdatedAt() != nil {
		obj.UpdatedAt = o.GetUpdatedAt().AsTime()
	}
	return obj
}

func quotaToPB(q target.Quota) *targetv1.Quota {
	return &targetv1.Quota{CpuMillicores: q.CPUMillicores, MemoryBytes: q.MemoryBytes, StorageBytes: q.StorageBytes}
}

func quotaFromPB(q *targetv1.Quota) target.Quota {
	return target.Quota{CPUMillicores: q.GetCpuMillicores(), MemoryBytes: q.GetMemoryBytes(), StorageBytes: q.GetStorageBytes()}
}

func factsToPB(f target.Facts) *targetv1.FactsResponse {
	out := &targetv1.FactsResponse{VcfaVersion: f.VCFAVersion, SupportedApis: f.SupportedAPIs}
	for _, s := range f.Supervisors {
		out.Supervisors = append(out.Supervisors, &targetv1.SupervisorFacts{Name: s.Name, Reachable: s.Reachable,
			Available: quotaToPB(s.Available), SupportedApis: s.SupportedAPIs})
	}
	return out
}

func factsFromPB(f *targetv1.FactsResponse) target.Facts {
	out := target.Facts{VCFAVersion: f.GetVcfaVersion(), SupportedAPIs: f.GetSupportedApis()}
	for _, s := range f.GetSupervisors() {
		out.Supervisors = append(out.Supervisors, target.SupervisorFacts{Name: s.GetName(), Reachable: s.GetReachable(),
			Available: quotaFromPB(s.GetAvailable()), SupportedAPIs: s.GetSupportedApis()})
	}
	return out
}
