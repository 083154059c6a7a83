package server

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/platform/grpcerr"
	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
	"github.com/vcfsm/vcfsm/services/renderer/internal/sandbox"
)

// ErrorTable maps the renderer's domain errors to gRPC codes.
var ErrorTable = grpcerr.Table{
	// The bundle or the value layers cannot be rendered: the message
	// names the layer, the path and the rule.
	{Err: render.ErrInvalidInput, Code: codes.InvalidArgument},
	// A digest-only request for a bundle the renderer does not hold: the
	// caller resends the files.
	{Err: render.ErrBundleNotCached, Code: codes.FailedPrecondition},
	{Err: render.ErrRenderFailed, Code: codes.Internal},
	// The sandbox stopped a render at its bounds.
	{Err: sandbox.ErrTimeLimit, Code: codes.DeadlineExceeded},
	{Err: sandbox.ErrMemoryLimit, Code: codes.ResourceExhausted},
	{Err: sandbox.ErrWorkerCrashed, Code: codes.Internal},
	{Err: sandbox.ErrClosed, Code: codes.Unavailable},
}

// withDetails adds a google.rpc.BadRequest listing every violation to an
// InvalidArgument domain error, for callers that want the fields rather
// than the message. The code still comes from ErrorTable.
func withDetails(err error) error {
	var re *render.Error
	if err == nil || !errors.As(err, &re) {
		return err
	}
	code, ok := ErrorTable.Code(err)
	if !ok || code != codes.InvalidArgument {
		return err
	}
	br := &errdetails.BadRequest{}
	for _, v := range re.Violations {
		br.FieldViolations = append(br.FieldViolations, &errdetails.BadRequest_FieldViolation{
			Field:       violationField(re.Layer, v.Path),
			Description: v.Rule,
		})
	}
	st, detailErr := status.New(code, err.Error()).WithDetails(br)
	if detailErr != nil {
		return err
	}
	return st.Err()
}

// violationField names where a violation is: the layer, then the path
// inside it (userOverwrite, valuesSchema.regions[0].name).
func violationField(layer, path string) string {
	switch {
	case path == "":
		return layer
	case path[0] == '[':
		return layer + path
	}
	return layer + "." + path
}
