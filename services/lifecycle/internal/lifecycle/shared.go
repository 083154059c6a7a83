package lifecycle

import (
	"context"
	"errors"
	"io"
)

// ErrBundleNotShared: the shared bundle store has no copy of a bundle.
var ErrBundleNotShared = errors.New("bundle not in the shared bundle store")

// SharedBundles is a store of bundle archives every replica reaches (the
// repository's store: bbolt or etcd), keyed by bundle digest. It verifies
// what it returns: the reader fails on a byte that is not what was put.
type SharedBundles interface {
	HasBundle(ctx context.Context, digest string) (bool, error)
	PutBundle(ctx context.Context, digest string, write func(io.Writer) error) error
	// OpenBundle wraps ErrBundleNotShared when there is no copy.
	OpenBundle(ctx context.Context, digest string) (io.Reader, error)
}
