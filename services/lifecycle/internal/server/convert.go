package server

import (
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

func toProto(svc *lifecycle.Service) *lifecyclev1.VcfService {
	grants, _ := structpb.NewStruct(svc.Accepted.AccessGrants)
	if grants == nil {
		grants = &structpb.Struct{Fields: map[string]*structpb.Value{}}
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
		Labels:       nonNil(svc.Labels),
		Locations:    nonNil(svc.Locations),
		Tenants:      nonNil(svc.Tenants),
		AutoUpgrade:  svc.AutoUpgrade,
		AutoRollback: svc.AutoRollback,
		BuiltIn:      svc.BuiltIn,
		Namespace:    svc.Namespace,
		Revision:     svc.Revision,
		CreatedAt:    svc.CreatedAt.Format(time.RFC3339),
		UpdatedAt:    svc.UpdatedAt.Format(time.RFC3339),
	}
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
