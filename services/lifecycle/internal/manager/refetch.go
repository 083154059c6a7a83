package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// refetchTimeout bounds one download of a missing bundle.
const refetchTimeout = 10 * time.Minute

// refetching gives every replica every bundle: a bundle this replica does
// not hold (another replica downloaded it, or its disk was lost) is
// downloaded again from the source the store records for its digest, and
// used only when the download has exactly that digest. Bundles are
// content-addressed, so the copy is the one the other replica used.
type refetching struct {
	lifecycle.Bundles
	repo lifecycle.Repository
	// mu makes concurrent loads of a missing bundle download it once.
	mu sync.Mutex
}

func (r *refetching) Load(digest string) (*bundle.Bundle, error) {
	b, err := r.Bundles.Load(digest)
	if !errors.Is(err, bundle.ErrNotFound) {
		return b, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, err := r.Bundles.Load(digest); !errors.Is(err, bundle.ErrNotFound) {
		return b, err // another load fetched it meanwhile
	}
	ctx, cancel := context.WithTimeout(context.Background(), refetchTimeout)
	defer cancel()
	source := r.sourceOf(ctx, digest)
	if source == "" {
		return nil, err
	}
	fetched, ferr := r.Fetch(ctx, source, nil)
	if ferr != nil {
		return nil, fmt.Errorf("bundle %s is not stored here; fetching it again from %s: %w", digest, source, ferr)
	}
	if fetched.Digest != digest {
		return nil, fmt.Errorf("bundle %s is not stored here, and %s now serves %s instead: %w", digest, source, fetched.Digest, err)
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
