package manager

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Revision is the store revision this replica's answers reflect at least
// (0 when the repository does not tell).
func (m *Manager) Revision() int64 {
	if r, ok := m.Repo.(lifecycle.Revisions); ok {
		return r.Revision()
	}
	return 0
}

// WaitRevision returns once this replica's view has reached rev (at once
// when the repository does not tell revisions).
func (m *Manager) WaitRevision(ctx context.Context, rev int64) error {
	if r, ok := m.Repo.(lifecycle.Revisions); ok {
		return r.WaitRevision(ctx, rev)
	}
	return nil
}
