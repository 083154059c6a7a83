package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// GET's view is built once per service record revision and newest
// upgrade, goes out as its kept encoding, and follows every change.
func TestGetServiceViewCache(t *testing.T) {
	h, repo := readModelHandler(t)
	ctx := context.Background()
	id := fmt.Sprintf("%s%08d-0000-0000-0000-000000000000", lifecycle.IDPrefix, 0)
	get := func(req *lifecyclev1.GetServiceRequest) *lifecyclev1.VcfService {
		t.Helper()
		res, err := h.GetService(ctx, req)
		require.NoError(t, err)
		return res.GetService()
	}
	first := get(&lifecyclev1.GetServiceRequest{Id: id})
	require.Same(t, first, get(&lifecyclev1.GetServiceRequest{Id: id}), "the same record: the same view")
	require.NotSame(t, first, get(&lifecyclev1.GetServiceRequest{Id: id, Signatures: true}), "other extras: another view")
	withState := get(&lifecyclev1.GetServiceRequest{Id: id, State: true})
	require.NotSame(t, withState, get(&lifecyclev1.GetServiceRequest{Id: id, State: true}), "live state is never kept")

	// The answer goes out as the view's encoding.
	intercept := h.Revisions(time.Second)
	resp, err := intercept(ctx, &lifecyclev1.GetServiceRequest{Id: id}, &grpc.UnaryServerInfo{}, func(ctx context.Context, req any) (any, error) {
		return h.GetService(ctx, req.(*lifecyclev1.GetServiceRequest))
	})
	require.NoError(t, err)
	wire, ok := resp.(grpcx.Encoded)
	require.True(t, ok, "a cached view's answer is sent encoded, got %T", resp)
	var decoded lifecyclev1.GetServiceResponse
	require.NoError(t, proto.Unmarshal(wire, &decoded))
	require.True(t, proto.Equal(first, decoded.GetService()))

	// A change of the record and a newer version in the catalog show.
	require.NoError(t, repo.Update(ctx, func(tx lifecycle.Tx) error {
		svc, err := tx.Service(id)
		if err != nil {
			return err
		}
		svc.Labels = map[string]string{"team": "blue"}
		if err := tx.PutService(svc); err != nil {
			return err
		}
		return tx.PutCatalog(&lifecycle.CatalogEntry{Name: "svc0.example.com", Version: "2.0.0", Digest: "sha256:2.0.0",
			Status: lifecycle.StatusReady, RegisteredAt: time.Now()})
	}))
	changed := get(&lifecyclev1.GetServiceRequest{Id: id})
	require.Equal(t, map[string]string{"team": "blue"}, changed.GetLabels())
	require.Equal(t, "2.0.0", changed.GetAvailableUpgrade())
	require.Empty(t, first.GetLabels(), "the old view was not modified")
}
