package lifecycle

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// refreshStatus recomputes a service's status from its resources.
func (m *core) refreshStatus(ctx context.Context, id string) error {
	res, err := m.repo.Resources(ctx, id)
	if err != nil {
		return err
	}
	_, err = m.mutate(ctx, id, func(_ Tx, svc *Service) error {
		m.setStatusFromResources(svc, res)
		return nil
	})
	return err
}

// setStatusFromResources: Healthy when every resource is Healthy,
// Unhealthy when any is Unhealthy, Busy otherwise. Services that are not
// running keep their status.
func (m *core) setStatusFromResources(svc *Service, res []*Resource) {
	if svc.LifecycleState != StateActive || svc.Maintenance {
		return
	}
	status := StatusHealthy
	for _, r := range res {
		switch r.Status {
		case target.StatusUnhealthy:
			status = StatusUnhealthy
		case target.StatusBusy, target.StatusMaintenance:
			if status != StatusUnhealthy {
				status = StatusBusy
			}
		}
	}
	if svc.ActiveOperation != "" && status == StatusHealthy {
		status = StatusBusy
	}
	svc.Status = status
	if status == StatusHealthy {
		svc.LastKnownGood = svc.Version
	}
}
