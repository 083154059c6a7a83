// Package server is the gRPC adapter of the renderer service.
package server

import (
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

// Handler implements rendererv1.RendererServiceServer.
type Handler struct {
	rendererv1.UnimplementedRendererServiceServer
}

// NewHandler builds the handler.
func NewHandler() *Handler { return &Handler{} }
