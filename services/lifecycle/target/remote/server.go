package remote

import (
	"context"

	targetv1 "github.com/vcfsm/vcfsm/gen/vcfservices/target/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Server exposes a driver as vcfservices.target.v1.TargetService. Errors go
// out as the driver returns them; the gRPC server's error table
// (ErrorTable) gives them their codes.
type Server struct {
	targetv1.UnimplementedTargetServiceServer
	d target.Driver
}

// NewServer serves d.
func NewServer(d target.Driver) *Server { return &Server{d: d} }

// Apply implements TargetService.
func (s *Server) Apply(ctx context.Context, req *targetv1.ApplyRequest) (*targetv1.ApplyResponse, error) {
	obj, err := s.d.Apply(ctx, desiredFromPB(req.GetDesired()))
	if err != nil {
		return nil, err
	}
	po, err := objectToPB(obj)
	return &targetv1.ApplyResponse{Object: po}, err
}

// Get implements TargetService.
func (s *Server) Get(ctx context.Context, req *targetv1.GetRequest) (*targetv1.GetResponse, error) {
	obj, err := s.d.Get(ctx, keyFromPB(req.GetKey()))
	if err != nil {
		return nil, err
	}
	po, err := objectToPB(obj)
	return &targetv1.GetResponse{Object: po}, err
}

// Transfer implements TargetService.
func (s *Server) Transfer(ctx context.Context, req *targetv1.TransferRequest) (*targetv1.TransferResponse, error) {
	obj, err := s.d.Transfer(ctx, keyFromPB(req.GetKey()), ownerFromPB(req.GetOwner()), req.GetFinalizers())
	if err != nil {
		return nil, err
	}
	po, err := objectToPB(obj)
	return &targetv1.TransferResponse{Object: po}, err
}

// Delete implements TargetService.
func (s *Server) Delete(ctx context.Context, req *targetv1.DeleteRequest) (*targetv1.DeleteResponse, error) {
	return &targetv1.DeleteResponse{}, s.d.Delete(ctx, keyFromPB(req.GetKey()))
}

// Release implements TargetService.
func (s *Server) Release(ctx context.Context, req *targetv1.ReleaseRequest) (*targetv1.ReleaseResponse, error) {
	return &targetv1.ReleaseResponse{}, s.d.Release(ctx, keyFromPB(req.GetKey()))
}

// Stage implements TargetService.
func (s *Server) Stage(ctx context.Context, req *targetv1.StageRequest) (*targetv1.StageResponse, error) {
	st, err := s.d.Stage(ctx, desiredFromPB(req.GetDesired()))
	if err != nil {
		return nil, err
	}
	return &targetv1.StageResponse{Reachable: st.Reachable, Message: st.Message, Requested: quotaToPB(st.Requested)}, nil
}

// Facts implements TargetService.
func (s *Server) Facts(ctx context.Context, req *targetv1.FactsRequest) (*targetv1.FactsResponse, error) {
	f, err := s.d.Facts(ctx, req.GetSupervisors())
	if err != nil {
		return nil, err
	}
	return factsToPB(f), nil
}

// Secrets implements TargetService.
func (s *Server) Secrets(ctx context.Context, req *targetv1.SecretsRequest) (*targetv1.SecretsResponse, error) {
	secrets, err := s.d.Secrets(ctx, req.GetSupervisor(), req.GetNamespace())
	if err != nil {
		return nil, err
	}
	out := &targetv1.SecretsResponse{Secrets: make(map[string]*targetv1.SecretData, len(secrets))}
	for name, data := range secrets {
		out.Secrets[name] = &targetv1.SecretData{Data: data}
	}
	return out, nil
}

// List implements TargetService.
func (s *Server) List(ctx context.Context, req *targetv1.ListRequest) (*targetv1.ListResponse, error) {
	objs, err := s.d.List(ctx, req.GetServiceId())
	if err != nil {
		return nil, err
	}
	out := &targetv1.ListResponse{Objects: make([]*targetv1.Object, 0, len(objs))}
	for _, o := range objs {
		po, err := objectToPB(o)
		if err != nil {
			return nil, err
		}
		out.Objects = append(out.Objects, po)
	}
	return out, nil
}
