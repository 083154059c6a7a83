package ops

import (
	"fmt"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// A partially failed upgrade (it failed once resources had started to
// move) leaves the service in maintenance: seed 002, the current version
// "stays in maintenance until the rollback starts", or the administrator
// fixes the cause and retries the upgrade. The controllers skip a service
// in maintenance, so the half-moved new version is not reconciled
// meanwhile. Accepted then: the rollback, the retry (PATCH or PUT of the
// same source again), DELETE and the plain fields (labels, locations,
// tenants, autoUpgrade, autoRollback, acceptance); any other change is
// refused with 409 saying so.

// maintenanceNote is the errorDetails entry a partial upgrade leaves.
func maintenanceNote(svc *lifecycle.Service, op *lifecycle.Operation) lifecycle.ErrorDetail {
	return lifecycle.ErrorDetail{Type: lifecycle.ErrTypeInstall, Severity: lifecycle.SeverityWarn,
		Message: fmt.Sprintf("the upgrade %s -> %s failed part way: the service stays in maintenance (not reconciled) until it is rolled back "+
			"(POST /v2/vcf-services/{id}/rollback) or the cause is fixed and the upgrade retried (PATCH source %s again)",
			op.FromVersion, op.ToVersion, nonEmptyStr(op.Params.Source, svc.Source))}
}

// inMaintenance handles a change to a service left in maintenance by a
// partial upgrade: the retry starts an upgrade again; other operations
// are refused. handled is false when the service is not in that state.
func inMaintenance(d *Deps, svc *lifecycle.Service, c Change, valuesChanged bool) (op *lifecycle.Operation, handled bool, err error) {
	if !svc.Maintenance || svc.ActiveOperation != "" || svc.PreviousVersion == nil {
		return nil, false, nil
	}
	refuse := func(what string) error {
		return fmt.Errorf("service %s is in maintenance after a partial upgrade to %s: %s is refused until it is rolled back "+
			"(POST /v2/vcf-services/{id}/rollback) or the upgrade retried (PATCH source %s again): %w",
			svc.NameOrID(), svc.Version, what, svc.Source, lifecycle.ErrConflict)
	}
	switch {
	case c.Source != nil && *c.Source != "" && *c.Source == svc.Source:
		return startUpgradeRetry(d, svc, c.RequestedBy), true, nil
	case c.Source != nil && *c.Source != "":
		return nil, true, refuse("an upgrade to another source")
	case c.LifecycleState != nil && *c.LifecycleState != svc.LifecycleState:
		return nil, true, refuse("moving lifecycleState to " + *c.LifecycleState)
	case valuesChanged || len(c.Reconfigure) > 0 || (c.Phase != nil && *c.Phase != ""):
		return nil, true, refuse("a configuration change")
	}
	return nil, true, nil
}

// startUpgradeRetry records the retry of a partial upgrade: the steps
// from maintenance on, moving the resources again from the version the
// service left (PreviousVersion) to the one it points at.
func startUpgradeRetry(d *Deps, svc *lifecycle.Service, by string) *lifecycle.Operation {
	op := upgradeOp.start(d, svc, by, lifecycle.OperationParams{Source: svc.Source, TargetDigest: svc.Digest})
	op.FromVersion, op.ToVersion = svc.PreviousVersion.Version, svc.Version
	var retried []lifecycle.Step
	for _, s := range op.Steps {
		switch s.Name {
		case "maintenance", "resources", "cleanup":
			retried = append(retried, s)
		}
	}
	op.Steps = retried
	svc.Phase = lifecycle.PhaseUpgrading
	svc.Status = lifecycle.StatusMaintenance
	svc.ErrorDetails = lifecycle.WithoutType(svc.ErrorDetails, lifecycle.ErrTypeInstall)
	return op
}
