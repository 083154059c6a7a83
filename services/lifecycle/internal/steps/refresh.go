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
	status := statusOf(res)
	if svc.ActiveOperation != "" && status == lifecycle.StatusHealthy {
		status = lifecycle.StatusBusy
	}
	svc.Status = status
	if status == lifecycle.StatusHealthy {
		svc.LastKnownGood = svc.Version
	}
}

// statusOf aggregates resource statuses: Unhealthy when any is; else
// Unavailable when any target cannot be reached (api.md: "service cannot
// be reached or managed"); else Busy when any is pending; else Healthy.
func statusOf(res []*lifecycle.Resource) string {
	rank := map[string]int{lifecycle.StatusHealthy: 0, lifecycle.StatusBusy: 1, lifecycle.StatusUnavailable: 2, lifecycle.StatusUnhealthy: 3}
	status := lifecycle.StatusHealthy
	for _, r := range res {
		s := lifecycle.StatusHealthy
		switch {
		case r.Status == target.StatusUnhealthy:
			s = lifecycle.StatusUnhealthy
		case r.Status == target.StatusBusy && r.Unreachable:
			s = lifecycle.StatusUnavailable
		case r.Status == target.StatusBusy, r.Status == target.StatusMaintenance:
			s = lifecycle.StatusBusy
		}
		if rank[s] > rank[status] {
			status = s
		}
	}
	return status
}
