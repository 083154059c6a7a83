package ops

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

func TestAcceptance(t *testing.T) {
	want := map[string]any{"VCF Automation": map[string]any{"GlobalRole": []any{"Arcturus Administrator"}}}
	require.NoError(t, acceptanceComplete(lifecycle.Accepted{EULA: true, Signatures: true, AccessGrants: map[string]any{
		"VCF Automation": map[string]any{"GlobalRole": []any{"Arcturus Administrator"}}}}, want))
	err := acceptanceComplete(lifecycle.Accepted{EULA: false, Signatures: true, AccessGrants: want}, want)
	require.ErrorIs(t, err, lifecycle.ErrFailedPrecondition)
	require.Contains(t, err.Error(), "accepted.eula")
	err = acceptanceComplete(lifecycle.Accepted{EULA: true, Signatures: true, AccessGrants: map[string]any{
		"VCF Automation": map[string]any{"GlobalRole": []any{"Other"}}}}, want)
	require.ErrorContains(t, err, "render-access-grants")
	require.ErrorContains(t, err, "Arcturus Administrator", "the message shows what is expected")
	// No grants needed: an empty object must be accepted as equal.
	require.NoError(t, acceptanceComplete(lifecycle.Accepted{EULA: true, Signatures: true}, map[string]any{}))
}
