package remote

import (
	targetv1 "github.com/vcfsm/vcfsm/gen/vcfservices/target/v1"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Register adds the driver's TargetService and its error table to srv.
func Register(srv *grpcx.Server, d target.Driver) {
	targetv1.RegisterTargetServiceServer(srv, NewServer(d))
	srv.RegisterErrors(targetv1.TargetService_ServiceDesc.ServiceName, ErrorTable)
}
