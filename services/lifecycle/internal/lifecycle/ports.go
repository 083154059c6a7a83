package lifecycle

import (
	"context"
	"fmt"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
)

// Repository is the lifecycle service's storage.
type Repository interface {
	// Service returns a copy of one service.
	Service(ctx context.Context, id string) (*Service, error)
	// SharedService returns the stored snapshot of one service, shared:
	// the caller must not modify it (reads that only look, such as GET).
	SharedService(ctx context.Context, id string) (*Service, error)
	// Services returns shared, read-only snapshots of every service.
	Services(ctx context.Context) []*Service
	// Update runs fn in one atomic transaction.
	Update(ctx context.Context, fn func(Tx) error) error
	Resources(ctx context.Context, serviceID string) ([]*Resource, error)
	Operations(ctx context.Context, serviceID string) ([]*Operation, error)
	Operation(ctx context.Context, serviceID, opID string) (*Operation, error)
	UnfinishedOperations(ctx context.Context) ([]*Operation, error)
	Catalog(ctx context.Context, name string) ([]*CatalogEntry, error)
	Inventory(ctx context.Context) (*Inventory, error)
	// RolloutStrategies are the provider's (none when never set).
	RolloutStrategies(ctx context.Context) (*RolloutStrategies, error)
	// Plan is the service's stored upgrade plan; ErrNotFound when none.
	Plan(ctx context.Context, serviceID string) (*StoredPlan, error)
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
	PutInventory(inv *Inventory) error
	PutRolloutStrategies(s *RolloutStrategies) error
	// PutPlan stores p as its service's plan, replacing the one before.
	PutPlan(p *StoredPlan) error
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

// Peers are the other services (internal/peers adapts their gRPC
// clients). Their errors are domain errors: ErrInvalidArgument for a bad
// bundle or bad values, ErrUnavailable for a peer that is down,
// ErrNotFound, or the context's error.
type Peers struct {
	Compatibility Compatibility
	Renderer      Renderer
	Precheck      Precheck
}

// Renderer renders bundles with value layers.
type Renderer interface {
	RenderResources(ctx context.Context, req RenderRequest) (*Rendering, error)
	RenderEffectiveValues(ctx context.Context, req RenderRequest) (*EffectiveValues, error)
	RenderAccessGrants(ctx context.Context, req RenderRequest) (map[string]any, error)
	ApplyOverlay(ctx context.Context, req OverlayRequest) (*OverlayResult, error)
}

// Compatibility validates packages and evaluates version constraints.
type Compatibility interface {
	ValidatePackage(ctx context.Context, req PackageValidation) (*Validation, error)
	EvaluateInstall(ctx context.Context, pkg PackageVersion, envs []Environment) (*Verdict, error)
	EvaluateUpgrade(ctx context.Context, installed, target PackageVersion, envs []Environment) (*Verdict, error)
	// EvaluateSupervisorUpgrade returns one verdict per package, in order.
	EvaluateSupervisorUpgrade(ctx context.Context, target Environment, pkgs []PackageVersion) ([]Verdict, error)
	// PlanUpgradePath returns the versions to go through; found is false
	// when there is no legal path.
	PlanUpgradePath(ctx context.Context, req PathRequest) (path []string, found bool, err error)
}

// Precheck runs pre-check hooks and dynamic pre-checks.
type Precheck interface {
	// DispatchHooks returns one result per request.
	DispatchHooks(ctx context.Context, reqs []HookRequest) ([]HookResult, error)
	RunDynamicPrechecks(ctx context.Context, req PrecheckRequest) (*PreCheckReport, error)
}

// CatalogGenerations is a repository that can say when its catalog may
// have changed: the generation moves on every catalog write (this
// replica's or, followed, another's), so an answer computed from the
// catalog at one generation stays right until it moves.
type CatalogGenerations interface {
	CatalogGeneration() uint64
}

// ValidateSource checks a bundle URL against the accepted schemes (the
// fetcher's rule, asked through bundles); the error is an
// ErrInvalidArgument that says what is wrong.
func ValidateSource(bundles Bundles, source string) error {
	if strings.TrimSpace(source) == "" {
		return fmt.Errorf("source is required: a bundle URL (https://…/bundle.tar or oci://registry/repository:tag): %w", ErrInvalidArgument)
	}
	if err := bundles.ValidateSource(source); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalidArgument)
	}
	return nil
}
