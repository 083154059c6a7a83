package ops

import (
	"context"
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// An upgrade of an inactive service. Its resources are not applied
// (api.md: inactive, "CRs are not applied"), so the upgrade only changes
// the version it will install: the new bundle is downloaded and
// validated, the current values must fit its schema, then the version
// step points the service at it and it ends like a fresh registration —
// Unresolved, the previous version's acceptance dropped (the EULA,
// signatures and access grants accepted were the old version's), so
// activation asks for the new version's. Nothing touches a target: no
// maintenance, no pre-check hook (nothing runs to ask), no staging.
var inactiveUpgradeSteps = []step{
	{"download", upgradeDownload},
	{"configuration", withVersions(upgradeConfiguration)},
	{"version", withVersions(upgradeInactiveVersion)},
}

// inactiveUpgradeStep finds the steps only an inactive service's upgrade
// journals (upgradeOp's dynamic lookup).
func inactiveUpgradeStep(name string) (step, bool) {
	for _, s := range inactiveUpgradeSteps {
		if s.name == name {
			return s, true
		}
	}
	return step{}, false
}

// startInactiveUpgrade records the upgrade of an inactive service on svc
// (inside a transaction): status Busy and phase Upgrading while it runs.
func startInactiveUpgrade(d *Deps, svc *lifecycle.Service, source, by string) *lifecycle.Operation {
	op := startUpgrade(d, svc, source, "", false, by)
	op.Params.PriorStatus = svc.Status
	op.Steps = op.Steps[:0]
	for _, s := range inactiveUpgradeSteps {
		op.Steps = append(op.Steps, lifecycle.Step{Name: s.name, Status: lifecycle.StepPending})
	}
	svc.Status = lifecycle.StatusBusy
	return op
}

// upgradeInactiveVersion points the inactive service at the new version.
func upgradeInactiveVersion(ctx context.Context, d *Deps, _ *run, u *upgradeVersions) error {
	_, err := d.Writer.Mutate(ctx, u.svc.ID, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		if s.LifecycleState != lifecycle.StateInactive {
			return lifecycle.Blocked(lifecycle.ErrTypeInstall, fmt.Errorf("service %s became %s during the upgrade of its inactive version", s.ID, s.LifecycleState))
		}
		if s.Version != u.to {
			s.Version, s.Digest, s.Source = u.to, u.nb.Digest, u.nb.Source
			s.Accepted = lifecycle.Accepted{}
		}
		s.PreviousVersion = nil
		s.Maintenance = false
		s.Status = lifecycle.StatusUnresolved
		return nil
	})
	return err
}
