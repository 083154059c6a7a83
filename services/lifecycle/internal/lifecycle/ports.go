package lifecycle

import (
	"context"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// Repository is the lifecycle service's storage.
type Repository interface {
	// Service returns a copy of one service.
	Service(ctx context.Context, id string) (*Service, error)
	// Services returns shared, read-only snapshots of every service.
	Services(ctx context.Context) []*Service
	// Update runs fn in one atomic transaction.
	Update(ctx context.Context, fn func(Tx) error) error
	Resources(ctx context.Context, serviceID string) ([]*Resource, error)
	Operations(ctx context.Context, serviceID string) ([]*Operation, error)
	Operation(ctx context.Context, serviceID, opID string) (*Operation, error)
	UnfinishedOperations(ctx context.Context) ([]*Operation, error)
	Catalog(ctx context.Context, name string) ([]*CatalogEntry, error)
	Inventory(ctx context.Context) (*commonv1.Inventory, error)
}

// Tx is a transactional view of the repository.
type Tx interface {
	Service(id string) (*Service, error)
	// PutService writes svc if it is still at svc.Revision (0: create) and
	// updates svc.Revision; otherwise ErrConflict.
	PutService(svc *Service) error
	// DeleteService removes the service and its resources (not its
	// operations, which are its history).
	DeleteService(id string) error
	Resources(serviceID string) ([]*Resource, error)
	PutResource(r *Resource) error
	DeleteResource(serviceID, id string) error
	Operation(serviceID, opID string) (*Operation, error)
	Operations(serviceID string) ([]*Operation, error)
	PutOperation(op *Operation) error
	Catalog(name string) ([]*CatalogEntry, error)
	PutCatalog(e *CatalogEntry) error
	PutInventory(inv *commonv1.Inventory) error
}

// Bundles fetches and keeps bundles (package bundle, which owns the
// source rule).
type Bundles interface {
	// ValidateSource checks a bundle URL (no I/O); the error says what is
	// wrong with it.
	ValidateSource(source string) error
	Fetch(ctx context.Context, source string, progress bundle.Progress) (*bundle.Bundle, error)
	Load(digest string) (*bundle.Bundle, error)
	Remove(digest string) error
}

// Peers are the other services, reached over gRPC.
type Peers struct {
	Compatibility compatibilityv1.CompatibilityServiceClient
	Renderer      rendererv1.RendererServiceClient
	Precheck      precheckv1.PrecheckServiceClient
}
