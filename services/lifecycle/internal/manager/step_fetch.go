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

// downloadError classifies bundle errors for errorDetails.
func downloadError(err error) error {
	switch {
	case errors.Is(err, bundle.ErrInvalidSource), errors.Is(err, bundle.ErrHostile),
		errors.Is(err, bundle.ErrInvalidPackage), errors.Is(err, bundle.ErrFetch):
		return blocked(lifecycle.ErrTypeDownload, err)
	}
	return err
}

// fetch downloads a bundle, showing progress on the service.
func (m *core) fetch(ctx context.Context, r *run, source string) (*bundle.Bundle, error) {
	var mu sync.Mutex
	last := time.Time{}
	progress := func(step string, percent int) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < 250*time.Millisecond && percent != 100 {
			return
		}
		last = time.Now()
		_, _ = m.mutate(context.WithoutCancel(ctx), r.op.ServiceID, func(_ lifecycle.Tx, svc *lifecycle.Service) error {
			if svc.ActiveOperation == r.op.ID {
				svc.Progress = &lifecycle.Progress{OperationID: r.op.ID, Type: r.op.Type, Step: "download", Message: step, Percent: percent}
			}
			return nil
		})
	}
	b, err := m.bundles.Fetch(ctx, source, progress)
	if err != nil {
		return nil, downloadError(err) // the fetcher's error names the source
	}
	return b, nil
}

// loadBundle returns a registered service's bundle.
func (m *core) loadBundle(svc *lifecycle.Service) (*bundle.Bundle, error) {
	if svc.Digest == "" {
		return nil, fmt.Errorf("service %s has no bundle yet (status %s): wait until it is Unresolved or Ready: %w", svc.ID, svc.Status, lifecycle.ErrFailedPrecondition)
	}
	b, err := m.bundles.Load(svc.Digest)
	if err != nil {
		return nil, fmt.Errorf("bundle %s of service %s: %w", svc.Digest, svc.ID, err)
	}
	return b, nil
}
