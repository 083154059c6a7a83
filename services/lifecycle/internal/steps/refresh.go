package steps

import (
	"context"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// RefreshStatus recomputes a service's status from its resources.
func RefreshStatus(ctx context.Context, repo lifecycle.Repository, w Writer, id string) error {
	res, err := repo.Resources(ctx, id)
	if err != nil {
		return err
	}
	_, err = w.Mutate(ctx, id, func(_ lifecycle.Tx, svc *lifecycle.Service) error {
		SetStatusFromResources(svc, res)
		return nil
	})
	return err
}

// SetStatusFromResources: Healthy when every resource is Healthy,
// Unhealthy when any is Unhealthy, Busy otherwise. Services that are not
// running keep their status.
func SetStatusFromResources(svc *lifecycle.Service, res []*lifecycle.Resource) {
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
