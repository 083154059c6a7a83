package lifecycle

import (
	"errors"
	"fmt"
)

// Domain errors. internal/server maps each to a gRPC code in one table.
var (
	// ErrNotFound: no service (or version, or operation) with that id.
	ErrNotFound = errors.New("not found")
	// ErrInvalidArgument: the request itself is malformed.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrInvalidTransition: the lifecycle state cannot move as asked.
	ErrInvalidTransition = errors.New("invalid lifecycle transition")
	// ErrFailedPrecondition: the request is well-formed but the service is
	// not in a state that allows it (e.g. activation before acceptance).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrConflict: a concurrent change won; re-read and retry.
	ErrConflict = errors.New("conflicting concurrent change")
	// ErrNotAccepted: the request does not accept what the version changes
	// (its EULA, signature set or access grants); the message says what
	// to accept. REST 409, as a conflict with the service's accepted terms.
	ErrNotAccepted = errors.New("terms not accepted")
	// ErrAlreadyExists: what the request would create exists already (a
	// service for a package that has one); the message names it.
	ErrAlreadyExists = errors.New("already exists")
	// ErrPermissionDenied: the caller's role does not allow what this
	// request asks beyond what its method allows (storing a plan from a
	// preview, for instance); the message names the permission.
	ErrPermissionDenied = errors.New("permission denied")
	// ErrUnavailable: a dependency (another service, a target) is down.
	ErrUnavailable = errors.New("unavailable")
	// ErrOverloaded: a dependency is busy (the renderer's queue is full,
	// or the caller holds its share of it): the caller retries later
	// (REST 429). It is an ErrUnavailable too, so operations retry it
	// like a peer that is down.
	ErrOverloaded error = overloadedError{}
)

type overloadedError struct{}

func (overloadedError) Error() string { return "busy: retry later" }

// Is makes a busy dependency an unavailable one as well.
func (overloadedError) Is(target error) bool { return target == ErrUnavailable }

// InvalidArgument reports cause, prefixed with what, as ErrInvalidArgument.
// It keeps only cause's text, on purpose: what cause wraps (a cancelled or
// timed-out download, a peer's NotFound or Unavailable) must not decide the
// code the caller gets, which wrapping it would let it do.
func InvalidArgument(what string, cause error) error {
	return fmt.Errorf("%s: %s: %w", what, cause.Error(), ErrInvalidArgument)
}
