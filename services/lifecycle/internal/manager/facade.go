package manager

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/ops"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/reads"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// The gRPC server's calls, each handed to the room that owns it. A new RPC
// adds one line here and its method in its room.

// Create registers a new service (ops).
func (m *Manager) Create(ctx context.Context, req ops.CreateRequest) (*lifecycle.Service, error) {
	return m.runner.Create(ctx, req)
}

// Apply carries out a PUT or PATCH (ops).
func (m *Manager) Apply(ctx context.Context, id string, c ops.Change) (*lifecycle.Service, error) {
	return m.runner.Apply(ctx, id, c)
}

// Delete starts a deletion (ops).
func (m *Manager) Delete(ctx context.Context, id string, force bool, by string) (*lifecycle.Service, error) {
	return m.runner.Delete(ctx, id, force, by)
}

// Rollback starts a rollback (ops).
func (m *Manager) Rollback(ctx context.Context, id, targetVersion, by string) (*lifecycle.Service, error) {
	return m.runner.Rollback(ctx, id, targetVersion, by)
}

// RegisterVersion enters a bundle in the catalog (ops).
func (m *Manager) RegisterVersion(ctx context.Context, source string, builtIn bool, by string) (*lifecycle.CatalogEntry, error) {
	return m.runner.RegisterVersion(ctx, source, builtIn, by)
}

// PutInventory replaces the platform inventory (ops).
func (m *Manager) PutInventory(ctx context.Context, inv *lifecycle.Inventory) ([]*steps.SupervisorVerdict, error) {
	return m.runner.PutInventory(ctx, inv)
}

// Get returns a copy of a service (reads).
func (m *Manager) Get(ctx context.Context, id string) (*lifecycle.Service, error) {
	return m.reader.Get(ctx, id)
}

// View returns a service's shared, read-only snapshot (reads).
func (m *Manager) View(ctx context.Context, id string) (*lifecycle.Service, error) {
	return m.reader.View(ctx, id)
}

// Bundle returns a service's bundle, nil while it downloads (reads).
func (m *Manager) Bundle(svc *lifecycle.Service) (*bundle.Bundle, error) { return m.reader.Bundle(svc) }

// State returns a service's resources and structured errors (reads).
func (m *Manager) State(ctx context.Context, id string) (*reads.StateView, error) {
	return m.reader.State(ctx, id)
}

// History lists a service's operations (reads).
func (m *Manager) History(ctx context.Context, id string) ([]*lifecycle.Operation, string, error) {
	return m.reader.History(ctx, id)
}

// List returns one page of services (reads).
func (m *Manager) List(ctx context.Context, q reads.ListQuery) (*reads.ListResult, error) {
	return m.reader.List(ctx, q)
}

// Versions lists the catalog (reads).
func (m *Manager) Versions(ctx context.Context, name string) ([]*lifecycle.CatalogEntry, error) {
	return m.reader.Versions(ctx, name)
}

// AvailableUpgrade is a service's newest registered newer version (reads).
func (m *Manager) AvailableUpgrade(ctx context.Context, svc *lifecycle.Service) (*lifecycle.CatalogEntry, error) {
	return m.reader.AvailableUpgrade(ctx, svc)
}

// Inventory returns the platform inventory (reads).
func (m *Manager) Inventory(ctx context.Context) (*lifecycle.Inventory, error) {
	return m.reader.Inventory(ctx)
}

// Watch streams a service's changes (reads).
func (m *Manager) Watch(ctx context.Context, id, until string, send func(reads.Event) error) error {
	return m.reader.Watch(ctx, id, until, send)
}

// Revision is the store revision this replica's answers reflect (reads).
func (m *Manager) Revision() int64 { return m.reader.Revision() }

// WaitRevision waits until this replica's view reaches rev (reads).
func (m *Manager) WaitRevision(ctx context.Context, rev int64) error {
	return m.reader.WaitRevision(ctx, rev)
}

// RenderEffectiveValues previews the effective values (reads).
func (m *Manager) RenderEffectiveValues(ctx context.Context, id string, in lifecycle.RenderInput, expanded bool) ([]byte, error) {
	return m.previews.RenderEffectiveValues(ctx, id, in, expanded)
}

// RenderValueProvenance previews which layer sets each value (reads).
func (m *Manager) RenderValueProvenance(ctx context.Context, id string, in lifecycle.RenderInput, expanded bool) ([]lifecycle.Provenance, error) {
	return m.previews.RenderValueProvenance(ctx, id, in, expanded)
}

// RenderResources previews the rendered resources (reads).
func (m *Manager) RenderResources(ctx context.Context, id string, in lifecycle.RenderInput) ([]byte, error) {
	return m.previews.RenderResources(ctx, id, in)
}

// RenderAccessGrants previews the access grants to accept (reads).
func (m *Manager) RenderAccessGrants(ctx context.Context, id string, in lifecycle.RenderInput) (map[string]any, error) {
	return m.previews.RenderAccessGrants(ctx, id, in)
}

// PreviewUpgrade runs an upgrade's checks without changing anything (reads).
// With store, an allowed plan is kept (ops) so the upgrade can execute it
// as approved: the plan comes back with its id and expiry.
func (m *Manager) PreviewUpgrade(ctx context.Context, req reads.PreviewRequest, store bool, accepted *lifecycle.Accepted, by string) (*reads.UpgradePlan, error) {
	plan, err := m.previews.PreviewUpgrade(ctx, req)
	if err != nil || !store || !plan.Allowed {
		return plan, err
	}
	kept, err := m.runner.StorePlan(ctx, &lifecycle.StoredPlan{ServiceID: req.ID, FromVersion: plan.FromVersion, ToVersion: plan.ToVersion,
		Source: plan.Source, Digest: plan.Digest, Strategy: plan.Strategy, Accepted: accepted, Basis: plan.Basis, By: by})
	if err != nil {
		return nil, err
	}
	plan.PlanID, plan.ExpiresAt = kept.ID, kept.CreatedAt.Add(lifecycle.PlanTTL)
	return plan, nil
}

// CheckSupervisorUpgrade evaluates a Supervisor upgrade (reads).
func (m *Manager) CheckSupervisorUpgrade(ctx context.Context, supervisor, targetVersion, targetK8s string) (*steps.SupervisorVerdict, error) {
	return m.previews.CheckSupervisorUpgrade(ctx, supervisor, targetVersion, targetK8s)
}
