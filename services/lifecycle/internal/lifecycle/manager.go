package lifecycle

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Repository is the storage the manager needs.
type Repository interface {
	Create(ctx context.Context, svc *Service) error
	Get(ctx context.Context, id string) (*Service, error)
}

// Config tunes the manager.
type Config struct {
	// AllowInsecureSources permits http:// bundle sources.
	AllowInsecureSources bool
	// Now returns the current time; tests pin it.
	Now func() time.Time
}

// Manager implements the lifecycle operations.
type Manager struct {
	cfg   Config
	repo  Repository
	newID func() string
}

// NewManager builds a manager over repo.
func NewManager(cfg Config, repo Repository) *Manager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Manager{cfg: cfg, repo: repo, newID: func() string { return IDPrefix + uuid.NewString() }}
}

// CreateRequest is what POST /v2/vcf-services carries.
type CreateRequest struct {
	Source, Name, Version string
	AutoUpgrade           bool
	AutoRollback          bool
	BuiltIn               bool
	Labels, Locations     map[string]string
}

var sourcePattern = regexp.MustCompile(`^(oci|https|http)://[^\s]+$`)

// ValidateSource checks a bundle URL against the accepted schemes.
func (m *Manager) ValidateSource(source string) error {
	if source == "" {
		return fmt.Errorf("source is required: a bundle URL (https://…/bundle.tar or oci://registry/repo:tag): %w", ErrInvalidArgument)
	}
	if !sourcePattern.MatchString(source) {
		return fmt.Errorf("source %q: want https://…/bundle.tar or oci://registry/repository[:tag|@digest]: %w", source, ErrInvalidArgument)
	}
	switch {
	case strings.HasPrefix(source, "http://") && !m.cfg.AllowInsecureSources:
		return fmt.Errorf("source %q: http:// sources are refused; use https:// or start the server with --allow-insecure-sources: %w", source, ErrInvalidArgument)
	case strings.HasPrefix(source, "https://") || strings.HasPrefix(source, "http://"):
		if !strings.HasSuffix(source, ".tar") {
			return fmt.Errorf("source %q: an http(s) source must name a bundle tarball ending in .tar: %w", source, ErrInvalidArgument)
		}
	}
	return nil
}

// Create registers a new service, inactive and Busy while its bundle is
// fetched.
func (m *Manager) Create(ctx context.Context, req CreateRequest) (*Service, error) {
	if err := m.ValidateSource(req.Source); err != nil {
		return nil, err
	}
	now := m.cfg.Now().UTC()
	svc := &Service{
		ID:             m.newID(),
		Name:           req.Name,
		Version:        req.Version,
		Source:         req.Source,
		Status:         StatusBusy,
		LifecycleState: StateInactive,
		Phase:          PhaseResolving,
		Labels:         req.Labels,
		Locations:      req.Locations,
		AutoUpgrade:    req.AutoUpgrade,
		AutoRollback:   req.AutoRollback,
		BuiltIn:        req.BuiltIn,
		CreatedAt:      now,
		UpdatedAt:      now,
	}
	if err := m.repo.Create(ctx, svc); err != nil {
		return nil, fmt.Errorf("create service: %w", err)
	}
	return svc, nil
}

// Get returns a service by id.
func (m *Manager) Get(ctx context.Context, id string) (*Service, error) {
	if !strings.HasPrefix(id, IDPrefix) {
		return nil, fmt.Errorf("service id %q: want %s<uuid>: %w", id, IDPrefix, ErrNotFound)
	}
	return m.repo.Get(ctx, id)
}
