// Package server is the gRPC adapter of the precheck service.
package server

import (
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
)

// Handler implements precheckv1.PrecheckServiceServer.
type Handler struct {
	precheckv1.UnimplementedPrecheckServiceServer
}

// NewHandler builds the handler.
func NewHandler() *Handler { return &Handler{} }
