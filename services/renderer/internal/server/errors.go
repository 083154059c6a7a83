package server

import (
	"errors"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

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
	// The queue is full or the caller holds its share: retry later. The
	// answer carries a google.rpc.RetryInfo (withDetails), which tells it
	// from a render stopped at its memory bound.
	{Err: sandbox.ErrBusy, Code: codes.ResourceExhausted},
}

// busyRetry is the delay a refused render is told to wait.
const busyRetry = time.Second

// withDetails adds a google.rpc.BadRequest listing every violation to an
// InvalidArgument domain error, for callers that want the fields rather
// than the message, and a google.rpc.RetryInfo to a busy refusal. The
// code still comes from ErrorTable.
func withDetails(err error) error {
	if errors.Is(err, sandbox.ErrBusy) {
		st, detailErr := status.New(codes.ResourceExhausted, err.Error()).WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(busyRetry)})
		if detailErr != nil {
			return err
		}
		return st.Err()
	}
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
