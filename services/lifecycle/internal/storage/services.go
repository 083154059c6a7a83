package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Services stores Service entities.
type Services struct {
	s store.Store
}

// NewServices wraps a store opened with Schema.
func NewServices(s store.Store) *Services { return &Services{s: s} }

// Create stores a new service; its id must be unused.
func (r *Services) Create(ctx context.Context, svc *lifecycle.Service) error {
	raw, err := json.Marshal(svc)
	if err != nil {
		return fmt.Errorf("encode service %s: %w", svc.ID, err)
	}
	rev, err := store.Put(ctx, r.s, BucketServices, svc.ID, raw, store.MustNotExist)
	if err != nil {
		return translate(svc.ID, err)
	}
	svc.Revision = rev
	return nil
}

// Get reads a service.
func (r *Services) Get(ctx context.Context, id string) (*lifecycle.Service, error) {
	rec, err := r.s.Get(ctx, BucketServices, id)
	if err != nil {
		return nil, translate(id, err)
	}
	return decodeService(rec)
}

func decodeService(rec store.Record) (*lifecycle.Service, error) {
	var svc lifecycle.Service
	if err := json.Unmarshal(rec.Value, &svc); err != nil {
		return nil, fmt.Errorf("decode service %s: %w", rec.Key, err)
	}
	svc.Revision = rec.Revision
	return &svc, nil
}

func translate(id string, err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("service %s: %w", id, lifecycle.ErrNotFound)
	case errors.Is(err, store.ErrConflict):
		return fmt.Errorf("service %s changed concurrently: %w", id, lifecycle.ErrConflict)
	}
	return err
}
