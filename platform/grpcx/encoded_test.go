package grpcx

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
)

// A reply returned as Encoded reaches the client as exactly those bytes:
// the health service answers SERVING, the interceptor swaps in the
// encoding of NOT_SERVING, and the client decodes NOT_SERVING.
func TestEncodedReplyIsSentAsIs(t *testing.T) {
	wire, err := proto.Marshal(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING})
	require.NoError(t, err)
	conn := serve(t, ServerConfig{}, func(s *Server) {
		s.InterceptUnary(healthpb.Health_ServiceDesc.ServiceName, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
			resp, err := handler(ctx, req)
			if err != nil {
				return nil, err
			}
			require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.(*healthpb.HealthCheckResponse).GetStatus())
			return Encoded(wire), nil
		})
	})
	res, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, res.GetStatus())
}
