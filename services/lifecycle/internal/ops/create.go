package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// CreateRequest is what POST /v2/vcf-services carries.
type CreateRequest struct {
	Source, Name, Version string
	AutoUpgrade           bool
	AutoRollback          bool
	BuiltIn               bool
	// AutoUpgradePrereleases lets automatic upgrades pick pre-releases.
	AutoUpgradePrereleases bool
	Labels, Locations      map[string]string
	RequestedBy            string
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
func (r *Runner) Create(ctx context.Context, req CreateRequest) (*lifecycle.Service, error) {
	if err := lifecycle.ValidateSource(r.d.Bundles, req.Source); err != nil {
		return nil, err
	}
	if err := validateLabels("labels", req.Labels); err != nil {
		return nil, err
	}
	if err := validateLabels("locations", req.Locations); err != nil {
		return nil, err
	}
	if err := refuseRegistered(ctx, &r.d, req); err != nil {
		return nil, err
	}
	if err := refuseInFlight(ctx, &r.d, req); err != nil {
		return nil, err
	}
	now := r.d.Now()
	svc := &lifecycle.Service{
		ID:             lifecycle.IDPrefix + uuid.NewString(),
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

		AutoUpgradePrereleases: req.AutoUpgradePrereleases,
		UpdatedAt:              now,
	}
	op := registerOp.start(&r.d, svc, req.RequestedBy, lifecycle.OperationParams{Source: req.Source, Name: req.Name, Version: req.Version, Phase: lifecycle.PhaseResolving})
	op.ToVersion = req.Version
	if req.BuiltIn {
		op.Override = builtInRecord(req.RequestedBy, now)
	}
	running(svc, op)
	err := r.d.Writer.Update(ctx, func(tx lifecycle.Tx) error {
		if err := tx.PutService(svc); err != nil {
			return err
		}
		return tx.PutOperation(op)
	})
	if err != nil {
		return nil, fmt.Errorf("create service: %w", err)
	}
	r.enqueue(ctx, op)
	return svc.Clone(), nil
}

// refuseRegistered refuses, before anything is created, a service whose
// package name is known without downloading (the request names it, or the
// catalog knows the source) and already has a service: there is one
// service per package name.
func refuseRegistered(ctx context.Context, d *Deps, req CreateRequest) error {
	name := req.Name
	if name == "" {
		entries, err := d.Repo.Catalog(ctx, "")
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
	if other := serviceNamed(ctx, d, name, ""); other != nil {
		return fmt.Errorf("%w: %w", alreadyRegistered(name, other), lifecycle.ErrAlreadyExists)
	}
	return nil
}

// serviceNamed is the live service of a package name other than the one
// with id except, or nil.
func serviceNamed(ctx context.Context, d *Deps, name, except string) *lifecycle.Service {
	if name == "" {
		return nil
	}
	for _, other := range d.Repo.Services(ctx) {
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
