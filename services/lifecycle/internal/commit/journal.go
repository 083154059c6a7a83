package commit

import (
	"context"
	"errors"
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// PutOperation writes op and, in the same transaction, its service as
// edit leaves it (stamped now); edit returns false to leave the service
// unwritten. A service already gone is fine (a delete's last step removes
// it).
func (w *Writer) PutOperation(ctx context.Context, op *lifecycle.Operation, edit func(svc *lifecycle.Service) bool) error {
	now := w.d.Now()
	return w.Update(ctx, func(tx lifecycle.Tx) error {
		if err := tx.PutOperation(op); err != nil {
			return err
		}
		svc, err := tx.Service(op.ServiceID)
		if errors.Is(err, lifecycle.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if !edit(svc) {
			return nil
		}
		svc.UpdatedAt = now
		return tx.PutService(svc)
	})
}

// CloseOperation writes a finished (or stuck) operation and lets edit
// update its service in the same transaction.
func (w *Writer) CloseOperation(ctx context.Context, op *lifecycle.Operation, edit func(svc *lifecycle.Service)) error {
	return w.PutOperation(ctx, op, func(svc *lifecycle.Service) bool {
		edit(svc)
		return true
	})
}

// CheckRevision refuses a conditional write (want set) to a service that
// moved on since the caller read it.
func CheckRevision(svc *lifecycle.Service, want *int64) error {
	if want != nil && *want != svc.Revision {
		return fmt.Errorf("service %s is at revision %d, the request expected %d: re-read it and retry: %w", svc.ID, svc.Revision, *want, lifecycle.ErrConflict)
	}
	return nil
}
