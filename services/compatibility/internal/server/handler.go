// Package server is the gRPC adapter of the compatibility service.
package server

import (
	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
)

// Handler implements compatibilityv1.CompatibilityServiceServer.
type Handler struct {
	compatibilityv1.UnimplementedCompatibilityServiceServer
}

// NewHandler builds the handler.
func NewHandler() *Handler { return &Handler{} }
