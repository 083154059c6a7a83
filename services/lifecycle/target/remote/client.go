// Package remote carries the target-driver boundary (target.Driver) over
// gRPC (vcfservices.target.v1.TargetService): Server exposes a driver —
// the simulator binary exposes the simulated platform — and Client is the
// driver every lifecycle replica uses to reach it, so all replicas see one
// platform.
package remote

import (
	"context"

	"google.golang.org/grpc"

	targetv1 "github.com/vcfsm/vcfsm/gen/vcfservices/target/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Client is a target.Driver reached over gRPC.
type Client struct {
	c targetv1.TargetServiceClient
}

var _ target.Driver = (*Client)(nil)

// NewClient uses conn (owned by the caller).
func NewClient(conn grpc.ClientConnInterface) *Client {
	return &Client{c: targetv1.NewTargetServiceClient(conn)}
}

// Apply implements target.Driver.
func (c *Client) Apply(ctx context.Context, d target.Desired) (target.Object, error) {
	pd, err := desiredToPB(d)
	if err != nil {
		return target.Object{}, err
	}
	resp, err := c.c.Apply(ctx, &targetv1.ApplyRequest{Desired: pd})
	if err != nil {
		return target.Object{}, fromStatus(err)
	}
	return objectFromPB(resp.GetObject()), nil
}

// Get implements target.Driver.
func (c *Client) Get(ctx context.Context, k target.Key) (target.Object, error) {
	resp, err := c.c.Get(ctx, &targetv1.GetRequest{Key: keyToPB(k)})
	if err != nil {
		return target.Object{}, fromStatus(err)
	}
	return objectFromPB(resp.GetObject()), nil
}

// Transfer implements target.Driver.
func (c *Client) Transfer(ctx context.Context, k target.Key, owner target.Owner, finalizers []string) (target.Object, error) {
	resp, err := c.c.Transfer(ctx, &targetv1.TransferRequest{Key: keyToPB(k), Owner: ownerToPB(owner), Finalizers: finalizers})
	if err != nil {
		return target.Object{}, fromStatus(err)
	}
	return objectFromPB(resp.GetObject()), nil
}

// Delete implements target.Driver.
func (c *Client) Delete(ctx context.Context, k target.Key) error {
	_, err := c.c.Delete(ctx, &targetv1.DeleteRequest{Key: keyToPB(k)})
	return fromStatus(err)
}

// Release implements target.Driver.
func (c *Client) Release(ctx context.Context, k target.Key) error {
	_, err := c.c.Release(ctx, &targetv1.ReleaseRequest{Key: keyToPB(k)})
	return fromStatus(err)
}

// Stage implements target.Driver.
func (c *Client) Stage(ctx context.Context, d target.Desired) (target.Staged, error) {
	pd, err := desiredToPB(d)
	if err != nil {
		return target.Staged{}, err
	}
	resp, err := c.c.Stage(ctx, &targetv1.StageRequest{Desired: pd})
	if err != nil {
		return target.Staged{}, fromStatus(err)
	}
	return target.Staged{Reachable: resp.GetReachable(), Message: resp.GetMessage(), Requested: quotaFromPB(resp.GetRequested())}, nil
}

// Facts implements target.Driver.
func (c *Client) Facts(ctx context.Context, supervisors []string) (target.Facts, error) {
	resp, err := c.c.Facts(ctx, &targetv1.FactsRequest{Supervisors: supervisors})
	if err != nil {
		return target.Facts{}, fromStatus(err)
	}
	return factsFromPB(resp), nil
}

// Secrets implements target.Driver.
func (c *Client) Secrets(ctx context.Context, supervisor, namespace string) (map[string]map[string][]byte, error) {
	resp, err := c.c.Secrets(ctx, &targetv1.SecretsRequest{Supervisor: supervisor, Namespace: namespace})
	if err != nil {
		return nil, fromStatus(err)
	}
	out := make(map[string]map[string][]byte, len(resp.GetSecrets()))
	for name, s := range resp.GetSecrets() {
		out[name] = s.GetData()
	}
	return out, nil
}

// List implements target.Driver.
func (c *Client) List(ctx context.Context, serviceID string) ([]target.Object, error) {
	resp, err := c.c.List(ctx, &targetv1.ListRequest{ServiceId: serviceID})
	if err != nil {
		return nil, fromStatus(err)
	}
	out := make([]target.Object, 0, len(resp.GetObjects()))
	for _, o := range resp.GetObjects() {
		out = append(out, objectFromPB(o))
	}
	return out, nil
}
