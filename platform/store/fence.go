package store

import (
	"context"
	"errors"
)

// ErrFenced: a fenced write was refused because the process no longer owns
// what it writes (its lease expired and another process may own it now).
// Retrying cannot help: the caller must stop.
var ErrFenced = errors.New("store: fenced: this process no longer holds the ownership its writes depend on")

// Fence makes every write of an Update conditional on an ownership record
// still being the one this process created: Key must exist with creation
// revision Revision. A process that lost its lease (paused, partitioned)
// then cannot write even if it has not noticed yet.
//
// Backends shared by several processes (etcd) enforce it in the same
// atomic commit as the writes; a single-process backend (bbolt) has no one
// to be fenced from and ignores it.
type Fence struct {
	// Key is the backend's own key of the ownership record (outside any
	// bucket), e.g. an etcd key under the store's prefix.
	Key      string
	Revision int64
}

type fenceKey struct{}

// WithFence returns a context whose Updates are fenced by f.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceOf returns the fence ctx carries, if any.
func FenceOf(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}
