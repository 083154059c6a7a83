package peers

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// A busy renderer (ResourceExhausted with a RetryInfo) is ErrOverloaded,
// which operations retry as unavailable; a render stopped at its memory
// bound (ResourceExhausted alone) is the bundle's problem.
func TestPeerErrorTellsBusyFromTooBig(t *testing.T) {
	st, err := status.New(codes.ResourceExhausted, "renderer busy: 8 renders are queued").
		WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(1e9)})
	require.NoError(t, err)
	busy := peerError("renderer", st.Err())
	require.ErrorIs(t, busy, lifecycle.ErrOverloaded)
	require.ErrorIs(t, busy, lifecycle.ErrUnavailable, "operations retry it")
	require.NotErrorIs(t, busy, lifecycle.ErrInvalidArgument)

	tooBig := peerError("renderer", status.Error(codes.ResourceExhausted, "render memory limit exceeded"))
	require.ErrorIs(t, tooBig, lifecycle.ErrInvalidArgument)
	require.NotErrorIs(t, tooBig, lifecycle.ErrOverloaded)
}
