package server

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/services/precheck/internal/dynamic"
	"github.com/vcfsm/vcfsm/services/precheck/internal/hook"
)

func TestErrorTable(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code codes.Code
	}{
		{"too many hook requests", fmt.Errorf("%w: 10001 requests", hook.ErrInvalidRequest), codes.InvalidArgument},
		{"dynamic pre-check request breaks the contract", fmt.Errorf("%w: resources[0]: yaml is empty", dynamic.ErrInvalidInput), codes.InvalidArgument},
		{"caller went away", fmt.Errorf("run: %w", context.Canceled), codes.Canceled},
		{"deadline", fmt.Errorf("run: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{"anything else is internal", errors.New("boom"), codes.Internal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := ErrorTable.ToStatus(tc.err)
			require.Equal(t, tc.code, status.Code(out))
			if tc.code == codes.InvalidArgument {
				// The caller sees what was wrong.
				require.Equal(t, tc.err.Error(), status.Convert(out).Message())
			}
		})
	}
}
