package manager

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// refreshStatus recomputes a service's status from its resources.
func (m *core) refreshStatus(ctx context.Context, id string) error {
	res, err := m.repo.Resources(ctx, id)
	if err != nil {
		return err
	}
	_, err = m.mutate(ctx, id, func(_ lifecycle.Tx, svc *lifecycle.Service) error {
		m.setStatusFromResources(svc, res)
		return nil
	})
	return err
}

// setStatusFromResources: Healthy when every resource is Healthy,
// Unhealthy when any is Unhealthy, Busy otherwise. Services that are not
// running keep their status.
func (m *core) setStatusFromResources(svc *lifecycle.Service, res []*lifecycle.Resource) {
	if svc.LifecycleState != lifecycle.StateActive || svc.Maintenance {
		return
	}
	status := lifecycle.StatusHealthy
	for _, r := range res {
		switch r.Status {
		case target.StatusUnhealthy:
			status = lifecycle.StatusUnhealthy
		case target.StatusBusy, target.StatusMaintenance:
			if status != lifecycle.StatusUnhealthy {
				status = lifecycle.StatusBusy
			}
		}
	}
	if svc.ActiveOperation != "" && status == lifecycle.StatusHealthy {
		status = lifecycle.StatusBusy
	}
	svc.Status = status
	if status == lifecycle.StatusHealthy {
		svc.LastKnownGood = svc.Version
	}
}
