package app

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
)

// sharedViews lets repeated GETs of a service skip decoding and JSON:
// lifecycle sends a cached view as the same deterministic bytes every
// time, so an answer whose bytes were seen before is the same view. The
// view decoded then is shared by every such answer (nobody modifies an
// answer), and its JSON is kept with it. Equal bytes are the only test:
// an answer never seen is decoded as before. Bounded by bytes and emptied
// when full, like the JSON cache.
type sharedViews struct {
	mu     sync.Mutex
	byWire map[string]*lifecyclev1.VcfService
	json   map[*lifecyclev1.VcfService][]byte
	bytes  int
	proto  encoding.CodecV2
}

func newSharedViews() *sharedViews {
	return &sharedViews{proto: encoding.GetCodecV2(protocodec.Name)}
}

// Name implements encoding.CodecV2: it is the protobuf codec.
func (s *sharedViews) Name() string { return protocodec.Name }

// Marshal implements encoding.CodecV2 (requests: unchanged).
func (s *sharedViews) Marshal(v any) (mem.BufferSlice, error) { return s.proto.Marshal(v) }

// Unmarshal implements encoding.CodecV2: a GetService answer seen before
// gets the view decoded then.
func (s *sharedViews) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*lifecyclev1.GetServiceResponse)
	if !ok || data.Len() > jsonCacheMaxEntry {
		return s.proto.Unmarshal(data, v)
	}
	var wire []byte
	if len(data) == 1 {
		wire = data[0].ReadOnlyData()
	} else {
		wire = data.Materialize()
	}
	s.mu.Lock()
	view, hit := s.byWire[string(wire)]
	s.mu.Unlock()
	if hit {
		r.Service = view
		return nil
	}
	key := string(wire) // a copy: the buffers go back to grpc's pool
	if err := s.proto.Unmarshal(data, v); err != nil || r.GetService() == nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byWire == nil || s.bytes+2*len(key) > jsonCacheBytes {
		s.byWire, s.json, s.bytes = map[string]*lifecyclev1.VcfService{}, map[*lifecyclev1.VcfService][]byte{}, 0
	}
	s.byWire[key] = r.GetService()
	s.json[r.GetService()] = nil // shared; its JSON comes with the first answer
	s.bytes += 2 * len(key)      // the bytes and, about, the decoded view
	return nil
}

// jsonOf returns a shared view's kept JSON (nil until keepJSON), and
// whether the view is shared at all.
func (s *sharedViews) jsonOf(view *lifecyclev1.VcfService) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, shared := s.json[view]
	return out, shared
}

// keepJSON keeps a shared view's JSON; views not decoded here are not
// shared and are left alone.
func (s *sharedViews) keepJSON(view *lifecyclev1.VcfService, out []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, shared := s.json[view]; shared {
		s.json[view] = out
		s.bytes += len(out)
	}
}

// viewClient asks lifecycle for services through sharedViews' codec.
type viewClient struct {
	lifecyclev1.LifecycleServiceClient
	views *sharedViews
}

func (c viewClient) GetService(ctx context.Context, in *lifecyclev1.GetServiceRequest, opts ...grpc.CallOption) (*lifecyclev1.GetServiceResponse, error) {
	return c.LifecycleServiceClient.GetService(ctx, in, append(opts, grpc.ForceCodecV2(c.views))...)
}
