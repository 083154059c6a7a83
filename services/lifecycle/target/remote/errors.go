package remote

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/platform/grpcerr"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// ErrorTable maps the driver's errors to gRPC codes (server side); the
// client maps them back, so callers test the same target errors whether
// the driver is local or remote.
var ErrorTable = grpcerr.Table{
	{Err: target.ErrNotFound, Code: codes.NotFound},
	{Err: target.ErrUnreachable, Code: codes.Unavailable},
	{Err: target.ErrOwnedByOther, Code: codes.AlreadyExists},
	{Err: target.ErrIncompatible, Code: codes.FailedPrecondition},
	{Err: target.ErrRejected, Code: codes.Aborted},
}

// fromStatus turns a call's error back into the driver's errors. A server
// that cannot be reached is an unreachable target too: the lifecycle
// service retries it.
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, r := range ErrorTable {
		if st.Code() == r.Code {
			return &remoteError{msg: st.Message(), err: r.Err}
		}
	}
	if st.Code() == codes.DeadlineExceeded {
		return &remoteError{msg: err.Error(), err: target.ErrUnreachable}
	}
	return err
}

// remoteError is the server's message, matching the driver error it
// stands for.
type remoteError struct {
	msg string
	err error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.err }
