package server

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/manager"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/signature"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/wire"
)

// extras are the optional parts of a VcfServiceWithExtras.
type extras struct {
	metadata, pkg, state, inventory, signatures bool
}

// readModel builds the REST view of services for one response. What every
// row shares (the platform inventory, a name's catalog) is read once per
// response, not once per row.
type readModel struct {
	m         *manager.Manager
	sigs      *signature.Verifier
	x         extras
	inventory *commonv1.Inventory
}

func newReadModel(m *manager.Manager, sigs *signature.Verifier, x extras) *readModel {
	return &readModel{m: m, sigs: sigs, x: x}
}

// view is one service as the REST surface shows it.
func (rm *readModel) view(ctx context.Context, svc *lifecycle.Service) (*lifecyclev1.VcfService, error) {
	out, err := toProto(svc)
	if err != nil {
		return nil, err
	}
	next, err := rm.availableUpgrade(ctx, svc)
	if err != nil {
		return nil, err
	}
	if next != nil {
		out.AvailableUpgrade = next.Version
	}
	if err := rm.bundleParts(svc, out); err != nil {
		return nil, err
	}
	if rm.x.state {
		st, err := rm.m.State(ctx, svc.ID)
		if err != nil {
			return nil, err
		}
		out.State = stateProto(st)
	}
	if rm.x.inventory {
		if rm.inventory == nil {
			inv, err := rm.m.Inventory(ctx)
			if err != nil {
				return nil, err
			}
			rm.inventory = wire.InventoryProto(inv)
		}
		out.Inventory = rm.inventory
	}
	return out, nil
}

// availableUpgrade is the service's newest registered upgrade, or nil.
func (rm *readModel) availableUpgrade(ctx context.Context, svc *lifecycle.Service) (*lifecycle.CatalogEntry, error) {
	next, err := rm.m.AvailableUpgrade(ctx, svc)
	if err != nil {
		return nil, fmt.Errorf("available upgrade of service %s: %w", svc.ID, err)
	}
	return next, nil
}

// bundleParts adds what comes from the service's bundle: signatures,
// metadata and package.
func (rm *readModel) bundleParts(svc *lifecycle.Service, out *lifecyclev1.VcfService) error {
	b, err := rm.m.Bundle(svc)
	if err != nil || b == nil {
		return err
	}
	out.Signatures = signaturesView(rm.sigs, svc, b, rm.x.signatures)
	if rm.x.metadata && b.Metadata != nil {
		md, err := metadataStruct(svc, b.Metadata)
		if err != nil {
			return err
		}
		out.Metadata = md
	}
	if rm.x.pkg {
		data := b64(b.PackageYAML)
		out.PackageData = &data
	}
	return nil
}

// metadataStruct converts a bundle's metadata document, saying which
// service's bundle carries a document that cannot be shown.
func metadataStruct(svc *lifecycle.Service, md map[string]any) (*structpb.Struct, error) {
	s, err := structpb.NewStruct(md)
	if err != nil {
		return nil, fmt.Errorf("metadata of service %s (bundle %s) cannot be represented as JSON: %w", svc.ID, svc.Digest, err)
	}
	return s, nil
}
