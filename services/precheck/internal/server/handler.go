// Package server is the gRPC adapter of the precheck service.
package server

import (
	"context"

	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	"github.com/vcfsm/vcfsm/services/precheck/internal/dynamic"
	"github.com/vcfsm/vcfsm/services/precheck/internal/hook"
)

// Handler implements precheckv1.PrecheckServiceServer.
type Handler struct {
	precheckv1.UnimplementedPrecheckServiceServer
	hooks  *hook.Dispatcher
	checks *dynamic.Checker
}

// NewHandler builds the handler.
func NewHandler(hooks *hook.Dispatcher, checks *dynamic.Checker) *Handler {
	return &Handler{hooks: hooks, checks: checks}
}

// DispatchHook calls one service's pre-check hook. Hook failures are in
// the result (blocked, failure), never a gRPC error.
func (h *Handler) DispatchHook(ctx context.Context, req *precheckv1.DispatchHookRequest) (*precheckv1.DispatchHookResponse, error) {
	return &precheckv1.DispatchHookResponse{Result: h.hooks.Dispatch(ctx, req)}, nil
}

// DispatchHooks calls many hooks concurrently and answers in request order.
func (h *Handler) DispatchHooks(ctx context.Context, req *precheckv1.DispatchHooksRequest) (*precheckv1.DispatchHooksResponse, error) {
	results, err := h.hooks.DispatchAll(ctx, req.GetRequests())
	if err != nil {
		return nil, err
	}
	return &precheckv1.DispatchHooksResponse{Results: results}, nil
}

// RunDynamicPrechecks checks the staged resources and aggregates the report.
func (h *Handler) RunDynamicPrechecks(ctx context.Context, req *precheckv1.RunDynamicPrechecksRequest) (*precheckv1.RunDynamicPrechecksResponse, error) {
	report, err := h.checks.Run(ctx, req)
	if err != nil {
		return nil, err
	}
	return &precheckv1.RunDynamicPrechecksResponse{Report: report}, nil
}
