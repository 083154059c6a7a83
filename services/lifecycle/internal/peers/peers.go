// Package peers adapts the compatibility, renderer and precheck services'
// gRPC clients to the lifecycle domain's ports (lifecycle.Peers): requests
// and answers are translated through internal/wire, and a peer's gRPC
// status becomes a domain error here, once.
package peers

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// New adapts the three peers reached over the given connections.
func New(compatibility, renderer, precheck grpc.ClientConnInterface) lifecycle.Peers {
	return lifecycle.Peers{
		Compatibility: Compatibility{c: compatibilityv1.NewCompatibilityServiceClient(compatibility)},
		Renderer:      Renderer{c: rendererv1.NewRendererServiceClient(renderer)},
		Precheck:      Precheck{c: precheckv1.NewPrecheckServiceClient(precheck)},
	}
}

// peerError turns a peer service's gRPC error into a domain error, keeping
// its message: a bad bundle or bad values is the caller's problem (400), a
// peer that is down is ErrUnavailable, a peer that says to retry later
// (ResourceExhausted with a RetryInfo: the renderer's queue) is
// ErrOverloaded. A ResourceExhausted without one is a render stopped at
// its memory bound: the bundle's problem.
func peerError(peer string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("%s: %w", peer, err)
	}
	if st.Code() == codes.ResourceExhausted && retryLater(st) {
		return fmt.Errorf("%s: %s: %w", peer, st.Message(), lifecycle.ErrOverloaded)
	}
	switch st.Code() {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.OutOfRange, codes.ResourceExhausted, codes.DeadlineExceeded:
		return fmt.Errorf("%s: %s: %w", peer, st.Message(), lifecycle.ErrInvalidArgument)
	case codes.Unavailable:
		return fmt.Errorf("%s unavailable: %s: %w", peer, st.Message(), lifecycle.ErrUnavailable)
	case codes.NotFound:
		return fmt.Errorf("%s: %s: %w", peer, st.Message(), lifecycle.ErrNotFound)
	}
	return fmt.Errorf("%s: %s (%s)", peer, st.Message(), st.Code())
}

// retryLater reports a status carrying a google.rpc.RetryInfo.
func retryLater(st *status.Status) bool {
	for _, d := range st.Details() {
		if _, ok := d.(*errdetails.RetryInfo); ok {
			return true
		}
	}
	return false
}
