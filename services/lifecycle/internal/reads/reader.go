// Package reads is the lifecycle service's read side: a service and its
// state and history, lists with their memo, the catalog with the kept
// available upgrades, the watch streams, and the previews (renders, the
// upgrade plan, a Supervisor upgrade check), which ask the peers but never
// write. Nothing here commits: the package does not know the write path.
package reads

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// Deps are what the reader reads.
type Deps struct {
	Repo    lifecycle.Repository
	Bundles lifecycle.Bundles
	Hub     *Hub
	Now     func() time.Time
}

// Reader answers the queries of the REST surface from the store.
type Reader struct {
	d Deps
	// upgrades: each installed version's available upgrade, per catalog
	// generation.
	upgrades upgradeMemo
	// lists: each filter's matches in the current services snapshot.
	lists listMemo
}

// New returns a reader over d.
func New(d Deps) *Reader { return &Reader{d: d} }

// Get returns a copy of a service by id.
func (r *Reader) Get(ctx context.Context, id string) (*lifecycle.Service, error) {
	if err := lifecycle.CheckID(id); err != nil {
		return nil, err
	}
	return r.d.Repo.Service(ctx, id)
}

// View returns a service for reading only: the stored snapshot, shared
// (the caller must not modify it), so a GET does not copy the record.
func (r *Reader) View(ctx context.Context, id string) (*lifecycle.Service, error) {
	if err := lifecycle.CheckID(id); err != nil {
		return nil, err
	}
	return r.d.Repo.SharedService(ctx, id)
}

// Bundle returns a service's bundle, nil while it is still downloading.
func (r *Reader) Bundle(svc *lifecycle.Service) (*bundle.Bundle, error) {
	if svc.Digest == "" {
		return nil, nil
	}
	return r.d.Bundles.Load(svc.Digest)
}

// requestBundle loads a service's bundle for a request (a preview). A
// bundle this replica holds nowhere, not in the shared store and not at its
// source right now, is Unavailable: the request may succeed later or on
// another replica; it is neither the caller's mistake nor an internal error.
func (r *Reader) requestBundle(svc *lifecycle.Service) (*bundle.Bundle, error) {
	b, err := steps.LoadBundle(r.d.Bundles, svc)
	if errors.Is(err, bundle.ErrNotFound) || errors.Is(err, bundle.ErrFetch) {
		return nil, fmt.Errorf("%w (%w: try again later or on another replica)", err, lifecycle.ErrUnavailable)
	}
	return b, err
}

// StateView is api.md's State.
type StateView struct {
	Resources    []*lifecycle.Resource
	ErrorDetails []lifecycle.ErrorDetail
	PreCheck     *lifecycle.PreCheckReport
	Progress     *lifecycle.Progress
	Orphans      []lifecycle.Orphan
	// Rollout is the running (or last) rollout, every target.
	Rollout *RolloutView
}

// State returns every resource's state and the structured errors.
func (r *Reader) State(ctx context.Context, id string) (*StateView, error) {
	svc, err := r.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	res, err := r.d.Repo.Resources(ctx, id)
	if err != nil {
		return nil, err
	}
	view := &StateView{Resources: res, ErrorDetails: slices.Clone(svc.ErrorDetails), PreCheck: svc.PreCheck, Progress: svc.Progress}
	for _, res := range res {
		switch res.Status {
		case lifecycle.StatusUnhealthy:
			view.ErrorDetails = append(view.ErrorDetails, lifecycle.ErrorDetail{Type: lifecycle.ErrTypeResource, Severity: lifecycle.SeverityError,
				Message: fmt.Sprintf("%s %s%s: %s", res.Kind, res.Name, steps.OnSupervisor(res.Supervisor), res.Message)})
		case lifecycle.StatusBusy:
			if svc.LifecycleState == lifecycle.StateActive {
				view.ErrorDetails = append(view.ErrorDetails, lifecycle.ErrorDetail{Type: lifecycle.ErrTypeResource, Severity: lifecycle.SeverityWarn,
					Message: fmt.Sprintf("%s %s%s: %s", res.Kind, res.Name, steps.OnSupervisor(res.Supervisor), res.Message)})
			}
		}
	}
	if ops, err := r.d.Repo.Operations(ctx, id); err == nil {
		for _, op := range ops {
			view.Orphans = append(view.Orphans, op.Orphans...)
		}
	}
	if svc.Rollout != nil {
		view.Rollout, _ = r.Rollout(ctx, id) // not yet laid out: none to show
	}
	return view, nil
}

// History lists a service's operations, oldest first, and names the last
// known good version. It answers for deleted services too.
func (r *Reader) History(ctx context.Context, id string) ([]*lifecycle.Operation, string, error) {
	ops, err := r.d.Repo.Operations(ctx, id)
	if err != nil {
		return nil, "", err
	}
	svc, err := r.d.Repo.Service(ctx, id)
	if errors.Is(err, lifecycle.ErrNotFound) {
		if len(ops) == 0 {
			return nil, "", err
		}
		return ops, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return ops, svc.LastKnownGood, nil
}

// Inventory returns the platform inventory.
func (r *Reader) Inventory(ctx context.Context) (*lifecycle.Inventory, error) {
	return r.d.Repo.Inventory(ctx)
}

// Versions lists the catalog (one package's versions, or every one).
func (r *Reader) Versions(ctx context.Context, name string) ([]*lifecycle.CatalogEntry, error) {
	return r.d.Repo.Catalog(ctx, name)
}

// Revision is the store revision this replica's answers reflect at least
// (0 when the repository does not tell).
func (r *Reader) Revision() int64 {
	if rv, ok := r.d.Repo.(lifecycle.Revisions); ok {
		return rv.Revision()
	}
	return 0
}

// WaitRevision returns once this replica's view has reached rev (at once
// when the repository does not tell revisions).
func (r *Reader) WaitRevision(ctx context.Context, rev int64) error {
	if rv, ok := r.d.Repo.(lifecycle.Revisions); ok {
		return rv.WaitRevision(ctx, rev)
	}
	return nil
}
