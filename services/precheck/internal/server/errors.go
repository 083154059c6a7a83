package server

import (
	"google.golang.org/grpc/codes"

	"github.com/vcfsm/vcfsm/platform/grpcerr"
	"github.com/vcfsm/vcfsm/services/precheck/internal/dynamic"
	"github.com/vcfsm/vcfsm/services/precheck/internal/hook"
)

// ErrorTable maps the precheck domain errors to gRPC codes. Hook failures
// and failed checks are not errors: they are in the results and reports.
var ErrorTable = grpcerr.Table{
	{Err: hook.ErrInvalidRequest, Code: codes.InvalidArgument},
	{Err: dynamic.ErrInvalidInput, Code: codes.InvalidArgument},
}
