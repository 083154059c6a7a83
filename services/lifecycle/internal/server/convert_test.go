package server

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// A service whose accepted grants cannot be shown as JSON is an error
// naming the service, not an empty object in the REST view.
func TestToProtoRefusesGrantsThatAreNotJSON(t *testing.T) {
	svc := &lifecycle.Service{ID: "urn:x", Accepted: lifecycle.Accepted{AccessGrants: map[string]any{"bad": make(chan int)}}}
	_, err := toProto(svc)
	require.ErrorContains(t, err, "access grants of service urn:x")

	svc.Accepted.AccessGrants = map[string]any{"roles": []any{"viewer"}}
	out, err := toProto(svc)
	require.NoError(t, err)
	require.Equal(t, "viewer", out.GetAccepted().GetAccessGrants().GetFields()["roles"].GetListValue().GetValues()[0].GetStringValue())
}
