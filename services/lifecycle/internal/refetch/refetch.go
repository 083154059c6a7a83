// Package refetch gives every replica every bundle: a decorator of the
// bundle fetcher that shares what this replica fetched and restores (or
// downloads again, verified by digest) what it lacks.
package refetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/depot"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// refetchTimeout bounds one download of a missing bundle.
const refetchTimeout = 10 * time.Minute

// bundleArchiver turns a locally stored bundle into an archive and back
// (bundle.Fetcher).
type bundleArchiver interface {
	Archive(digest string, w io.Writer) error
	Restore(ctx context.Context, digest string, r io.Reader) (*bundle.Bundle, error)
}

// refetching gives every replica every bundle. A bundle this replica
// fetched is also put in the shared store; a bundle it does not hold
// (another replica downloaded it, or its disk was lost) is restored from
// the shared store, and only when that has no usable copy downloaded again
// from the source the repository records for its digest, accepted only
// with exactly that digest (and then shared again, replacing a corrupt
// copy). Bundles are content-addressed, so every copy is the one the other
// replica used.
type refetching struct {
	lifecycle.Bundles
	repo lifecycle.Repository
	// local and shared are nil when bundles are not shared (a Bundles
	// that cannot archive, or a repository without a shared store).
	local  bundleArchiver
	shared lifecycle.SharedBundles
	log    *slog.Logger
	// mu makes concurrent loads of a missing bundle restore it once.
	mu sync.Mutex
}

// New decorates bundles (kept in a cache of the 64 most recently used)
// for replicas sharing repo.
func New(bundles lifecycle.Bundles, repo lifecycle.Repository, log *slog.Logger) lifecycle.Bundles {
	r := &refetching{Bundles: depot.NewCache(bundles, 64), repo: repo, log: log}
	local, ok1 := bundles.(bundleArchiver)
	shared, ok2 := repo.(lifecycle.SharedBundles)
	if ok1 && ok2 {
		r.local, r.shared = local, shared
	}
	return r
}

// Fetch fetches a bundle and makes sure the shared store has it.
func (r *refetching) Fetch(ctx context.Context, source string, progress bundle.Progress) (*bundle.Bundle, error) {
	b, err := r.Bundles.Fetch(ctx, source, progress)
	if err != nil {
		return nil, err
	}
	r.share(ctx, b.Digest, false)
	return b, nil
}

// share puts a locally stored bundle in the shared store (again, when
// replace). A failure is logged, not returned: the bundle is usable here,
// and other replicas still have its source.
func (r *refetching) share(ctx context.Context, digest string, replace bool) {
	if r.shared == nil {
		return
	}
	if !replace {
		has, err := r.shared.HasBundle(ctx, digest)
		if err == nil && has {
			return
		}
	}
	err := r.shared.PutBundle(ctx, digest, func(w io.Writer) error { return r.local.Archive(digest, w) })
	if err != nil {
		r.log.Warn("bundle not shared: other replicas will download it from its source", "digest", digest, "error", err)
	}
}

func (r *refetching) Load(digest string) (*bundle.Bundle, error) {
	b, err := r.Bundles.Load(digest)
	if !errors.Is(err, bundle.ErrNotFound) {
		return b, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, err := r.Bundles.Load(digest); !errors.Is(err, bundle.ErrNotFound) {
		return b, err // another load restored it meanwhile
	}
	ctx, cancel := context.WithTimeout(context.Background(), refetchTimeout)
	defer cancel()
	sharedErr := r.restore(ctx, digest)
	if sharedErr == nil {
		return r.Bundles.Load(digest)
	}
	if !errors.Is(sharedErr, lifecycle.ErrBundleNotShared) {
		r.log.Warn("bundle in the shared store refused; downloading it again from its source", "digest", digest, "error", sharedErr)
	}
	fetched, ferr := r.refetch(ctx, digest, err)
	if ferr != nil {
		if sharedErr != nil && !errors.Is(sharedErr, lifecycle.ErrBundleNotShared) {
			return nil, fmt.Errorf("%w (and the shared copy was refused: %w)", ferr, sharedErr)
		}
		return nil, ferr
	}
	r.share(ctx, digest, sharedErr != nil)
	return fetched, nil
}

// restore copies the bundle from the shared store to the local one.
func (r *refetching) restore(ctx context.Context, digest string) error {
	if r.shared == nil {
		return lifecycle.ErrBundleNotShared
	}
	archive, err := r.shared.OpenBundle(ctx, digest)
	if err != nil {
		return err
	}
	_, err = r.local.Restore(ctx, digest, archive)
	return err
}

// refetch downloads the bundle again from its recorded source; notHere is
// the local store's error, returned when no source is known.
func (r *refetching) refetch(ctx context.Context, digest string, notHere error) (*bundle.Bundle, error) {
	source := r.sourceOf(ctx, digest)
	if source == "" {
		return nil, notHere
	}
	fetched, err := r.Bundles.Fetch(ctx, source, nil)
	if err != nil {
		return nil, fmt.Errorf("bundle %s is not stored here; fetching it again from %s: %w", digest, source, err)
	}
	if fetched.Digest != digest {
		return nil, fmt.Errorf("bundle %s is not stored here, and %s now serves %s instead: %w", digest, source, fetched.Digest, notHere)
	}
	return fetched, nil
}

// sourceOf finds where the store says the bundle of digest came from.
func (r *refetching) sourceOf(ctx context.Context, digest string) string {
	for _, svc := range r.repo.Services(ctx) {
		if svc.Digest == digest && svc.Source != "" {
			return svc.Source
		}
		if p := svc.PreviousVersion; p != nil && p.Digest == digest && p.Source != "" {
			return p.Source
		}
	}
	entries, err := r.repo.Catalog(ctx, "")
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if e.Digest == digest && e.Source != "" {
			return e.Source
		}
	}
	return ""
}
