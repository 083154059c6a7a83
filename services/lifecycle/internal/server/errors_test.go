package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

func TestErrorTable(t *testing.T) {
	cases := []struct {
		err  error
		code codes.Code
		msg  string // "" keeps the error's own text
	}{
		{fmt.Errorf("service x: %w", lifecycle.ErrNotFound), codes.NotFound, ""},
		// Markers classify and leave the sentence (issue 16 §7).
		{fmt.Errorf("source is required: a bundle URL: %w", lifecycle.ErrInvalidArgument), codes.InvalidArgument, "source is required: a bundle URL"},
		{fmt.Errorf("active -> inactive: %w", lifecycle.ErrInvalidTransition), codes.InvalidArgument, ""},
		{fmt.Errorf("accept the EULA first (accepted.eula): %w", lifecycle.ErrFailedPrecondition), codes.FailedPrecondition, "accept the EULA first (accepted.eula)"},
		{fmt.Errorf("rev: %w", lifecycle.ErrConflict), codes.Aborted, ""},
		// A refusal of terms is a 409 that reads as what to accept, not as a race.
		{fmt.Errorf("version 2.0.0 changes what was accepted: accepted.eula must be true: %w", lifecycle.ErrNotAccepted), codes.Aborted,
			"version 2.0.0 changes what was accepted: accepted.eula must be true"},
		{fmt.Errorf("a.example.com is already registered as service x: %w", lifecycle.ErrAlreadyExists), codes.AlreadyExists, "a.example.com is already registered as service x"},
		{fmt.Errorf("renderer: %w", lifecycle.ErrUnavailable), codes.Unavailable, ""},
		{context.Canceled, codes.Canceled, ""},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), codes.DeadlineExceeded, ""},
		{errors.New("disk on fire"), codes.Internal, ""},
		// A busy peer is 429, not 503, and says when to come back.
		{fmt.Errorf("renderer: queue full: retry later: %w", lifecycle.ErrOverloaded), codes.ResourceExhausted, "renderer: queue full: retry later"},
	}
	for _, c := range cases {
		t.Run(c.err.Error(), func(t *testing.T) {
			st := status.Convert(ErrorTable.ToStatus(c.err))
			require.Equal(t, c.code, st.Code())
			want := c.msg
			if want == "" {
				want = c.err.Error()
			}
			if c.code != codes.Internal {
				require.Equal(t, want, st.Message(), "mapped errors keep their actionable message")
			} else {
				require.NotContains(t, st.Message(), "disk on fire", "internal errors are masked")
			}
		})
	}
}
