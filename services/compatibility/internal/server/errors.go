package server

import (
	"google.golang.org/grpc/codes"

	"github.com/vcfsm/vcfsm/platform/grpcerr"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/compat"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/pkgdoc"
)

// ErrorTable maps the compatibility domain errors to gRPC codes. Every
// domain error is bad input: the service holds no state that could be
// missing, conflicting or unavailable.
var ErrorTable = grpcerr.Table{
	{Err: constraint.ErrInvalid, Code: codes.InvalidArgument},
	{Err: compat.ErrInvalidRequest, Code: codes.InvalidArgument},
	{Err: pkgdoc.ErrInvalidPackage, Code: codes.InvalidArgument},
}
