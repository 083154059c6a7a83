package app

import (
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
)

// Bytes seen before give the view decoded then, and its JSON is the
// JSON marshalling gives; other bytes are decoded.
func TestSharedViewsDecodeRepeatedAnswersOnce(t *testing.T) {
	views := newSharedViews()
	m := &bodyMarshaler{Marshaler: &runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{EmitDefaultValues: true}}, views: views}
	encode := func(labels map[string]string) mem.BufferSlice {
		wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(&lifecyclev1.GetServiceResponse{
			Service: &lifecyclev1.VcfService{Id: "urn:x", Labels: labels}})
		require.NoError(t, err)
		return mem.BufferSlice{mem.SliceBuffer(wire)}
	}
	decode := func(data mem.BufferSlice) *lifecyclev1.VcfService {
		var r lifecyclev1.GetServiceResponse
		require.NoError(t, views.Unmarshal(data, &r))
		return r.GetService()
	}
	blue := map[string]string{"team": "blue", "tier": "gold"}
	first := decode(encode(blue))
	require.Same(t, first, decode(encode(blue)))
	green := decode(encode(map[string]string{"team": "green"}))
	require.NotSame(t, first, green)
	require.Equal(t, "green", green.GetLabels()["team"])

	want, err := m.Marshaler.Marshal(first)
	require.NoError(t, err)
	for range 2 { // the first marshals and keeps, the second is kept
		got, err := m.Marshal(first)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(got))
	}
	kept, shared := views.jsonOf(first)
	require.True(t, shared)
	require.JSONEq(t, string(want), string(kept))
	_, shared = views.jsonOf(&lifecyclev1.VcfService{Id: "urn:x"})
	require.False(t, shared, "a view not decoded here is not shared")

	// Other messages are decoded by the protobuf codec as they were.
	var other lifecyclev1.GetServiceStateResponse
	require.NoError(t, views.Unmarshal(mem.BufferSlice{mem.SliceBuffer(nil)}, &other))
}
