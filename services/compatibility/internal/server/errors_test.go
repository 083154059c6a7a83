package server

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/compat"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/pkgdoc"
)

func TestErrorTable(t *testing.T) {
	_, parseErr := constraint.Parse(constraint.SyntaxB, "==9.0")
	tests := []struct {
		name string
		err  error
		code codes.Code
	}{
		{"invalid constraint expression", fmt.Errorf("package.constraints.supervisor_version: %w", parseErr), codes.InvalidArgument},
		{"invalid request", fmt.Errorf("%w: package is required", compat.ErrInvalidRequest), codes.InvalidArgument},
		{"several problems joined", errors.Join(fmt.Errorf("a: %w", parseErr), missing("b")), codes.InvalidArgument},
		{"unanalysable package.yml", fmt.Errorf("%w: no Package document", pkgdoc.ErrInvalidPackage), codes.InvalidArgument},
		{"anything else is internal", errors.New("boom"), codes.Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := status.Convert(ErrorTable.ToStatus(tt.err))
			require.Equal(t, tt.code, st.Code())
			if tt.code == codes.InvalidArgument {
				require.Equal(t, tt.err.Error(), st.Message(), "the caller sees what is wrong and where")
			}
		})
	}
}
