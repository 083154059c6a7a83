package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/version"
)

// PutInventory replaces the platform inventory. Every Supervisor whose
// version (or Kubernetes version) rises is evaluated against the services
// installed on it, and the outcome is recorded on each affected service's
// errorDetails. New Supervisors trigger services that asked for
// reconfiguration on new-supervisor events.
func (r *Runner) PutInventory(ctx context.Context, inv *lifecycle.Inventory) ([]*steps.SupervisorVerdict, error) {
	if err := lifecycle.ValidateInventory(inv); err != nil {
		return nil, err
	}
	old, err := r.d.Repo.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	if err := r.d.Writer.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutInventory(inv) }); err != nil {
		return nil, err
	}
	before := steps.SupervisorsByName(old)
	var checks []*steps.SupervisorVerdict
	added := false
	for _, region := range inv.RegionList() {
		for _, s := range region.Supervisors {
			prev, ok := before[s.Name]
			if !ok {
				added = true
				continue
			}
			if version.Compare(s.Version, prev.Version) > 0 || (s.KubernetesVersion != "" && version.Compare(s.KubernetesVersion, prev.KubernetesVersion) > 0) {
				chk, err := steps.EvaluateSupervisor(ctx, r.d.Repo, r.d.Bundles, r.d.Ports.Peers.Compatibility, s.Name, s.Version, s.KubernetesVersion)
				if err != nil {
					return nil, err
				}
				checks = append(checks, chk)
				if err := recordSupervisorCheck(ctx, &r.d, chk); err != nil {
					return nil, err
				}
			}
		}
	}
	if added {
		r.reconfigureForNewSupervisors(ctx)
	}
	return checks, nil
}

// recordSupervisorCheck keeps a Supervisor upgrade's verdict on each
// affected service's errorDetails.
func recordSupervisorCheck(ctx context.Context, d *Deps, chk *steps.SupervisorVerdict) error {
	for _, v := range chk.Services {
		prefix := fmt.Sprintf("Supervisor %s upgrade to %s: ", chk.Supervisor, chk.TargetVersion)
		_, err := d.Writer.Mutate(ctx, v.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
			kept := s.ErrorDetails[:0:0]
			for _, d := range s.ErrorDetails {
				if !strings.HasPrefix(d.Message, fmt.Sprintf("Supervisor %s upgrade to ", chk.Supervisor)) {
					kept = append(kept, d)
				}
			}
			s.ErrorDetails = kept
			for _, r := range v.Results {
				sev := lifecycle.SeverityInfo
				switch strings.ToUpper(r.Severity) {
				case "ERROR":
					sev = lifecycle.SeverityError
				case "WARNING":
					sev = lifecycle.SeverityWarn
				}
				s.ErrorDetails = append(s.ErrorDetails, lifecycle.ErrorDetail{Type: lifecycle.ErrTypeConfiguration, Severity: sev, Message: prefix + r.Message})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// reconfigureForNewSupervisors re-applies services that asked to follow
// new Supervisors.
func (r *Runner) reconfigureForNewSupervisors(ctx context.Context) {
	for _, svc := range r.d.Repo.Services(ctx) {
		if svc.LifecycleState != lifecycle.StateActive || !slices.Contains(svc.Reconfigure, "new-supervisor") {
			continue
		}
		_, err := r.Apply(ctx, svc.ID, Change{Reconfigure: []string{"new-supervisor"}, RequestedBy: "inventory"})
		if err != nil {
			r.d.Log.Warn("reconfigure for a new Supervisor", "service", svc.ID, "error", err)
		}
	}
}
