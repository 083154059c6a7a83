package steps

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
		return lifecycle.Blocked(lifecycle.ErrTypeDownload, err)
	}
	return err
}

// Fetch downloads a bundle for operation op, showing progress on its
// service.
func Fetch(ctx context.Context, bundles lifecycle.Bundles, w Writer, op *lifecycle.Operation, source string) (*bundle.Bundle, error) {
	var mu sync.Mutex
	last := time.Time{}
	progress := func(step string, percent int) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < 250*time.Millisecond && percent != 100 {
			return
		}
		last = time.Now()
		_, _ = w.Mutate(context.WithoutCancel(ctx), op.ServiceID, func(_ lifecycle.Tx, svc *lifecycle.Service) error {
			if svc.ActiveOperation == op.ID {
				svc.Progress = &lifecycle.Progress{OperationID: op.ID, Type: op.Type, Override: op.Override, Step: "download", Message: step, Percent: OperationPercent(op, "download", percent)}
			}
			return nil
		})
	}
	b, err := bundles.Fetch(ctx, source, progress)
	if err != nil {
		return nil, downloadError(err) // the fetcher's error names the source
	}
	return b, nil
}

// OperationPercent is how far op is when its step has done percent of its
// own work: the steps before it count whole, so the percent an operation
// shows never goes back as it moves from a download to the next step.
func OperationPercent(op *lifecycle.Operation, step string, percent int) int {
	for i, s := range op.Steps {
		if s.Name == step {
			return (i*100 + min(max(percent, 0), 100)) / len(op.Steps)
		}
	}
	return percent
}

// LoadBundle returns a registered service's bundle.
func LoadBundle(bundles lifecycle.Bundles, svc *lifecycle.Service) (*bundle.Bundle, error) {
	if svc.Digest == "" {
		return nil, fmt.Errorf("service %s has no bundle yet (status %s): wait until it is Unresolved or Ready: %w", svc.ID, svc.Status, lifecycle.ErrFailedPrecondition)
	}
	b, err := bundles.Load(svc.Digest)
	if err != nil {
		return nil, fmt.Errorf("bundle %s of service %s: %w", svc.Digest, svc.ID, err)
	}
	return b, nil
}
