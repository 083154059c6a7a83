package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
)

// CreateRequest is what POST /v2/vcf-services carries.
type CreateRequest struct {
	Source, Name, Version string
	AutoUpgrade           bool
	AutoRollback          bool
	BuiltIn               bool
	Labels, Locations     map[string]string
	RequestedBy           string
}

// ValidateSource checks a bundle URL against the accepted schemes.
func (m *core) ValidateSource(source string) error {
	if strings.TrimSpace(source) == "" {
		return fmt.Errorf("source is required: a bundle URL (https://…/bundle.tar or oci://registry/repository:tag): %w", lifecycle.ErrInvalidArgument)
	}
	if err := m.Bundles.ValidateSource(source); err != nil {
		return fmt.Errorf("%w: %w", err, lifecycle.ErrInvalidArgument)
	}
	return nil
}

func validateLabels(field string, m map[string]string) error {
	for k, v := range m {
		if strings.TrimSpace(k) == "" {
			return fmt.Errorf("%s: empty key: %w", field, lifecycle.ErrInvalidArgument)
		}
		if len(k) > 253 || len(v) > 1024 {
			return fmt.Errorf("%s[%q]: key at most 253 and value at most 1024 characters: %w", field, k, lifecycle.ErrInvalidArgument)
		}
	}
	return nil
}

// Create registers a new service, inactive and Busy while its bundle is
// downloaded, extracted and validated by a register operation.
func (m *Manager) Create(ctx context.Context, req CreateRequest) (*lifecycle.Service, error) {
	if err := m.ValidateSource(req.Source); err != nil {
		return nil, err
	}
	if err := validateLabels("labels", req.Labels); err != nil {
		return nil, err
	}
	if err := validateLabels("locations", req.Locations); err != nil {
		return nil, err
	}
	if err := m.refuseRegistered(ctx, req); err != nil {
		return nil, err
	}
	now := m.now()
	svc := &lifecycle.Service{
		ID:             newServiceID(),
		Name:           req.Name,
		Version:        req.Version,
		Source:         req.Source,
		Status:         lifecycle.StatusBusy,
		LifecycleState: lifecycle.StateInactive,
		Phase:          lifecycle.PhaseResolving,
		Labels:         req.Labels,
		Locations:      req.Locations,
		AutoUpgrade:    req.AutoUpgrade,
		AutoRollback:   req.AutoRollback,
		BuiltIn:        req.BuiltIn,
		CreatedAt:      now,
		UpdatedAt:      now,
	}
	op := m.newOperation(svc, lifecycle.OpRegister, req.RequestedBy, lifecycle.OperationParams{Source: req.Source, Name: req.Name, Version: req.Version, Phase: lifecycle.PhaseResolving},
		registerSteps...)
	op.ToVersion = req.Version
	svc.ActiveOperation = op.ID
	svc.Progress = &lifecycle.Progress{OperationID: op.ID, Type: op.Type, Step: "download", Percent: -1}
	err := m.Update(ctx, func(tx lifecycle.Tx) error {
		if err := tx.PutService(svc); err != nil {
			return err
		}
		return tx.PutOperation(op)
	})
	if err != nil {
		return nil, fmt.Errorf("create service: %w", err)
	}
	m.enqueue(ctx, op)
	return svc.Clone(), nil
}

// refuseRegistered refuses, before anything is created, a service whose
// package name is known without downloading (the request names it, or the
// catalog knows the source) and already has a service: there is one
// service per package name.
func (m *core) refuseRegistered(ctx context.Context, req CreateRequest) error {
	name := req.Name
	if name == "" {
		entries, err := m.Repo.Catalog(ctx, "")
		if err != nil {
			return fmt.Errorf("read the catalog: %w", err)
		}
		for _, e := range entries {
			if e.Source == req.Source {
				name = e.Name
				break
			}
		}
	}
	if other := m.serviceNamed(ctx, name, ""); other != nil {
		return fmt.Errorf("%w: %w", alreadyRegistered(name, other), lifecycle.ErrAlreadyExists)
	}
	return nil
}

// serviceNamed is the live service of a package name other than the one
// with id except, or nil.
func (m *core) serviceNamed(ctx context.Context, name, except string) *lifecycle.Service {
	if name == "" {
		return nil
	}
	for _, other := range m.Repo.Services(ctx) {
		if other.ID != except && other.Name == name && other.LifecycleState != lifecycle.StateDecommissioned {
			return other
		}
	}
	return nil
}

// alreadyRegistered names the service a package already has.
func alreadyRegistered(name string, other *lifecycle.Service) error {
	return fmt.Errorf("%s is already registered as service %s (version %s): upgrade that service (PATCH source) or register this version with POST /v2/vcf-service-versions",
		name, other.ID, other.Version)
}

// Get returns a service by id.
func (m *core) Get(ctx context.Context, id string) (*lifecycle.Service, error) {
	if !strings.HasPrefix(id, lifecycle.IDPrefix) {
		return nil, fmt.Errorf("service %q: ids look like %s<uuid>: %w", id, lifecycle.IDPrefix, lifecycle.ErrNotFound)
	}
	return m.Repo.Service(ctx, id)
}

// View returns a service for reading only: the stored snapshot, shared
// (the caller must not modify it), so a GET does not copy the record.
func (m *Manager) View(ctx context.Context, id string) (*lifecycle.Service, error) {
	if !strings.HasPrefix(id, lifecycle.IDPrefix) {
		return nil, fmt.Errorf("service %q: ids look like %s<uuid>: %w", id, lifecycle.IDPrefix, lifecycle.ErrNotFound)
	}
	return m.Repo.SharedService(ctx, id)
}

// Bundle returns a service's bundle, nil while it is still downloading.
func (m *Manager) Bundle(svc *lifecycle.Service) (*bundle.Bundle, error) {
	if svc.Digest == "" {
		return nil, nil
	}
	return m.Bundles.Load(svc.Digest)
}

// StateView is api.md's State.
type StateView struct {
	Resources    []*lifecycle.Resource
	ErrorDetails []lifecycle.ErrorDetail
	PreCheck     *lifecycle.PreCheckReport
	Progress     *lifecycle.Progress
	Orphans      []lifecycle.Orphan
}

// State returns every resource's state and the structured errors.
func (m *Manager) State(ctx context.Context, id string) (*StateView, error) {
	svc, err := m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	res, err := m.Repo.Resources(ctx, id)
	if err != nil {
		return nil, err
	}
	view := &StateView{Resources: res, ErrorDetails: slices.Clone(svc.ErrorDetails), PreCheck: svc.PreCheck, Progress: svc.Progress}
	for _, r := range res {
		switch r.Status {
		case lifecycle.StatusUnhealthy:
			view.ErrorDetails = append(view.ErrorDetails, lifecycle.ErrorDetail{Type: lifecycle.ErrTypeResource, Severity: lifecycle.SeverityError,
				Message: fmt.Sprintf("%s %s%s: %s", r.Kind, r.Name, steps.OnSupervisor(r.Supervisor), r.Message)})
		case lifecycle.StatusBusy:
			if svc.LifecycleState == lifecycle.StateActive {
				view.ErrorDetails = append(view.ErrorDetails, lifecycle.ErrorDetail{Type: lifecycle.ErrTypeResource, Severity: lifecycle.SeverityWarn,
					Message: fmt.Sprintf("%s %s%s: %s", r.Kind, r.Name, steps.OnSupervisor(r.Supervisor), r.Message)})
			}
		}
	}
	if ops, err := m.Repo.Operations(ctx, id); err == nil {
		for _, op := range ops {
			view.Orphans = append(view.Orphans, op.Orphans...)
		}
	}
	return view, nil
}

// History lists a service's operations, oldest first, and names the last
// known good version. It answers for deleted services too.
func (m *Manager) History(ctx context.Context, id string) ([]*lifecycle.Operation, string, error) {
	ops, err := m.Repo.Operations(ctx, id)
	if err != nil {
		return nil, "", err
	}
	svc, err := m.Repo.Service(ctx, id)
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
