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
	Labels, Locations     map[string]string
	RequestedBy           string
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
		UpdatedAt:      now,
	}
	op := registerOp.start(&r.d, svc, req.RequestedBy, lifecycle.OperationParams{Source: req.Source, Name: req.Name, Version: req.Version, Phase: lifecycle.PhaseResolving})
	op.ToVersion = req.Version
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
