// Package server is the gRPC adapter of the lifecycle service: it
// validates and translates requests at the boundary and calls the domain.
package server

import (
	"context"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Handler implements lifecyclev1.LifecycleServiceServer.
type Handler struct {
	lifecyclev1.UnimplementedLifecycleServiceServer
	m *lifecycle.Manager
}

// NewHandler adapts a manager.
func NewHandler(m *lifecycle.Manager) *Handler { return &Handler{m: m} }

// CreateService implements POST /v2/vcf-services.
func (h *Handler) CreateService(ctx context.Context, req *lifecyclev1.CreateServiceRequest) (*lifecyclev1.CreateServiceResponse, error) {
	svc, err := h.m.Create(ctx, lifecycle.CreateRequest{
		Source:       req.GetSource(),
		Name:         req.GetName(),
		Version:      req.GetVersion(),
		AutoUpgrade:  req.GetAutoUpgrade(),
		AutoRollback: req.GetAutoRollback(),
		BuiltIn:      req.GetBuiltIn(),
		Labels:       req.GetLabels(),
		Locations:    req.GetLocations(),
	})
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.CreateServiceResponse{Service: toProto(svc)}, nil
}

// GetService implements GET /v2/vcf-services/{id}.
func (h *Handler) GetService(ctx context.Context, req *lifecyclev1.GetServiceRequest) (*lifecyclev1.GetServiceResponse, error) {
	svc, err := h.m.Get(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return &lifecyclev1.GetServiceResponse{Service: toProto(svc)}, nil
}
