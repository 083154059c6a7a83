package server

import (
	"google.golang.org/grpc/codes"

	"github.com/vcfsm/vcfsm/platform/grpcerr"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// ErrorTable is the one mapping from lifecycle domain errors to gRPC codes;
// the gateway maps codes to HTTP (InvalidArgument and FailedPrecondition
// 400, NotFound 404, Aborted and AlreadyExists 409, PermissionDenied 403, ResourceExhausted 429, Unavailable 503).
var ErrorTable = grpcerr.Table{
	{Err: lifecycle.ErrNotFound, Code: codes.NotFound},
	{Err: lifecycle.ErrInvalidArgument, Code: codes.InvalidArgument, Marker: true},
	{Err: lifecycle.ErrInvalidTransition, Code: codes.InvalidArgument},
	{Err: lifecycle.ErrFailedPrecondition, Code: codes.FailedPrecondition, Marker: true},
	{Err: lifecycle.ErrConflict, Code: codes.Aborted},
	{Err: lifecycle.ErrNotAccepted, Code: codes.Aborted, Marker: true},
	{Err: lifecycle.ErrAlreadyExists, Code: codes.AlreadyExists, Marker: true},
	{Err: lifecycle.ErrPermissionDenied, Code: codes.PermissionDenied, Marker: true},
	// Before ErrUnavailable, which it is too: 429, not 503.
	{Err: lifecycle.ErrOverloaded, Code: codes.ResourceExhausted, Marker: true},
	{Err: lifecycle.ErrUnavailable, Code: codes.Unavailable},
}
