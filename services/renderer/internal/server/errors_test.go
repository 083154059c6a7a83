package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
	"github.com/vcfsm/vcfsm/services/renderer/internal/sandbox"
)

func TestErrorTable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{&render.Error{Kind: render.ErrInvalidInput, Layer: "userOverwrite", Violations: []render.Violation{{Rule: "invalid base64"}}}, codes.InvalidArgument},
		{render.NotCachedError("sha256:x"), codes.FailedPrecondition},
		{fmt.Errorf("%w: ytt panicked", render.ErrRenderFailed), codes.Internal},
		{fmt.Errorf("%w: ran longer than 10s", sandbox.ErrTimeLimit), codes.DeadlineExceeded},
		{fmt.Errorf("%w: used 600 MiB", sandbox.ErrMemoryLimit), codes.ResourceExhausted},
		{fmt.Errorf("%w: exited", sandbox.ErrWorkerCrashed), codes.Internal},
		{sandbox.ErrClosed, codes.Unavailable},
		{fmt.Errorf("waiting for a render worker: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{fmt.Errorf("render abandoned: %w", context.Canceled), codes.Canceled},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			st := status.Convert(ErrorTable.ToStatus(tc.err))
			require.Equal(t, tc.code, st.Code())
			require.Equal(t, tc.err.Error(), st.Message(), "mapped errors keep their message")
		})
	}
}

func TestUnmappedErrorsAreMasked(t *testing.T) {
	st := status.Convert(ErrorTable.ToStatus(errors.New("secret internals")))
	require.Equal(t, codes.Internal, st.Code())
	require.NotContains(t, st.Message(), "secret internals")
}

func TestInvalidInputCarriesBadRequestDetails(t *testing.T) {
	err := withDetails(&render.Error{Kind: render.ErrInvalidInput, Layer: render.LayerValuesSchema, Violations: []render.Violation{
		{Path: "regions[0].hostSupervisor.configuration.port", Rule: "expected integer, got string"},
		{Path: "[\"odd.key\"]", Rule: "required property is missing"},
		{Rule: "whole-layer problem"},
	}})
	st := status.Convert(ErrorTable.ToStatus(err))
	require.Equal(t, codes.InvalidArgument, st.Code())
	require.Equal(t, `valuesSchema: regions[0].hostSupervisor.configuration.port: expected integer, got string; ["odd.key"]: required property is missing; whole-layer problem`, st.Message())
	require.Len(t, st.Details(), 1)
	br, ok := st.Details()[0].(*errdetails.BadRequest)
	require.True(t, ok)
	var fields, descriptions []string
	for _, v := range br.GetFieldViolations() {
		fields = append(fields, v.GetField())
		descriptions = append(descriptions, v.GetDescription())
	}
	require.Equal(t, []string{"valuesSchema.regions[0].hostSupervisor.configuration.port", `valuesSchema["odd.key"]`, "valuesSchema"}, fields)
	require.Equal(t, []string{"expected integer, got string", "required property is missing", "whole-layer problem"}, descriptions)
}

func TestOnlyInvalidInputGetsDetails(t *testing.T) {
	for _, err := range []error{
		render.NotCachedError("sha256:x"),
		fmt.Errorf("%w: slow", sandbox.ErrTimeLimit),
		nil,
	} {
		out := withDetails(err)
		require.Equal(t, err, out)
	}
}

// A busy refusal says when to come back (google.rpc.RetryInfo): lifecycle
// tells it from a render stopped at its memory bound by that.
func TestBusyCarriesRetryInfo(t *testing.T) {
	err := withDetails(fmt.Errorf("%w: 8 renders are queued", sandbox.ErrBusy))
	st := status.Convert(ErrorTable.ToStatus(err))
	require.Equal(t, codes.ResourceExhausted, st.Code())
	require.Equal(t, "renderer busy: 8 renders are queued", st.Message())
	require.Len(t, st.Details(), 1)
	ri, ok := st.Details()[0].(*errdetails.RetryInfo)
	require.True(t, ok)
	require.Equal(t, busyRetry, ri.GetRetryDelay().AsDuration())

	memory := status.Convert(ErrorTable.ToStatus(withDetails(fmt.Errorf("%w: used 600 MiB", sandbox.ErrMemoryLimit))))
	require.Equal(t, codes.ResourceExhausted, memory.Code())
	require.Empty(t, memory.Details(), "a render stopped at its bound is not to be retried")
}
