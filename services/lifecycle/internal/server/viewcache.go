package server

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// viewCache keeps GET's views of services: a view is a function of the
// service record (its store revision), the newest upgrade in the catalog,
// the extras asked for and, when signatures are verified, the validation
// time (to the second). Building it (the access grants as a Struct, the
// bundle's parts, the signatures) is most of GetService's own work, and
// the same service is read over and over. Views are shared between
// responses and never modified. Views that read live state (state,
// inventory) or carry the whole package are not kept. The cache is
// bounded by entries and emptied when full: no eviction bookkeeping.
//
// It also keeps each cached view's answer in wire format (encoded): the
// Revisions interceptor sends those bytes (grpcx.Encoded) instead of
// encoding the same view again on every GET.
type viewCache struct {
	mu sync.Mutex
	m  map[viewKey]*lifecyclev1.VcfService
	// encoded holds grpcx.Encoded values, boxed once: returned as a
	// reply, a boxed slice costs no allocation per call.
	encoded map[*lifecyclev1.VcfService]any
}

const viewCacheEntries = 4096

type viewKey struct {
	id             string
	revision       int64
	upgrade        string
	x              extras
	validationTime string
	// hidden are the secrets hidden from the view (nil: none): a viewer's
	// view is another view (redact.go).
	hidden *secrets
}

// view returns the service's view, from the cache when it holds it, with
// hide's secrets hidden (nil: none).
func (c *viewCache) view(ctx context.Context, rm *readModel, svc *lifecycle.Service, hide *secrets) (*lifecyclev1.VcfService, error) {
	if rm.x.state || rm.x.inventory || rm.x.pkg || svc.Revision == 0 {
		v, err := rm.view(ctx, svc)
		if err == nil && hide != nil {
			hide.hideView(v)
		}
		return v, err
	}
	next, err := rm.availableUpgrade(ctx, svc)
	if err != nil {
		return nil, err
	}
	key := viewKey{id: svc.ID, revision: svc.Revision, x: rm.x, hidden: hide}
	if next != nil {
		key.upgrade = next.Version
	}
	if rm.sigs.Configured() {
		key.validationTime = time.Now().UTC().Format(time.RFC3339)
	}
	c.mu.Lock()
	v, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err = rm.view(ctx, svc)
	if err != nil {
		return nil, err
	}
	if hide != nil {
		hide.hideView(v)
	}
	// A view built in the next second says so: it is not this key's. A
	// bundle still downloading is not in the record: keep no view without
	// its parts.
	if key.validationTime != "" && v.GetSignatures().GetValidationTime() != key.validationTime ||
		svc.Digest != "" && v.GetSignatures() == nil {
		return v, nil
	}
	// Deterministic: the same view is always the same bytes, so whoever
	// reads the answers can recognise a repeated one by its bytes.
	wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(&lifecyclev1.GetServiceResponse{Service: v})
	if err != nil {
		return v, nil //nolint:nilerr // the answer is still sent, encoded by grpc
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= viewCacheEntries {
		c.m = make(map[viewKey]*lifecyclev1.VcfService)
		c.encoded = make(map[*lifecyclev1.VcfService]any)
	}
	c.m[key] = v
	c.encoded[v] = grpcx.Encoded(wire)
	return v, nil
}

// encodedAnswer returns GetService's answer in wire format (a
// grpcx.Encoded) when its view is one the cache holds (and so unchanged
// since it was encoded).
func (c *viewCache) encodedAnswer(resp any) (any, bool) {
	r, ok := resp.(*lifecyclev1.GetServiceResponse)
	if !ok || r.GetService() == nil {
		return nil, false
	}
	c.mu.Lock()
	wire, ok := c.encoded[r.GetService()]
	c.mu.Unlock()
	return wire, ok
}
