package vcfsm_test

import "net/http"

// modelTable is docs/lifecycle-semantics.md: cellKey(row, column) →
// what the action does there. Messages are parts of the refusal.
var modelTable = map[string]outcome{}

const (
	inProgress = "operation is in progress"
	beingDel   = "is being deleted"
	noPrev     = "no previous version"
	isPaused   = "is paused: resume it before upgrading"
	noBundle   = "bundle yet"
)

func init() {
	for row, cells := range map[string]map[string]outcome{
		"registering":     registeringCells(),
		"unresolved":      inactiveCells("Unresolved"),
		"ready":           inactiveCells("Ready"),
		"download-failed": downloadFailedCells(),
		"deactivated":     deactivatedCells(),
		"installing":      installingCells(),
		"healthy":         healthyCells(),
		"unhealthy":       unhealthyCells(),
		"upgrading":       upgradingCells(),
		"upgrade-failed":  upgradeFailedCells(),
		"unavailable":     unavailableCells(),
		"paused":          pausedCells(),
		"delete-failed":   deleteFailedCells(),
	} {
		for col, o := range cells {
			modelTable[cellKey(row, col)] = o
		}
	}
}

// Cells shared by several rows.
var (
	gone202  = acc("gone", "none", "deleted: every resource removed (finalizers honoured), then the record")
	forced   = acc("gone", "none", "deleted at once: what it reaches is removed, finalizers stripped")
	dupe     = refused(conflict409, "already registered", "", "").decided()
	noRollbk = refused(bad400, noPrev, "", "")
	// PATCH phase Configuring re-applies an active service's configuration:
	// refused 400 naming the state of one that is not active (decisions.md,
	// "PATCH phase takes all eight values").
	noPhase = refused(bad400, "re-applies an active service's configuration", "", "").decided()
)

func withEnd(o outcome, end, targets string) outcome {
	if o.End == "" {
		o.End = end
	}
	if o.Targets == "" {
		o.Targets = targets
	}
	return o
}

// fill gives refusals (and cells that leave the service alone) the row's
// own end and targets.
func fill(cells map[string]outcome, end, targets string) map[string]outcome {
	for k, o := range cells {
		cells[k] = withEnd(o, end, targets)
	}
	return cells
}

func registeringCells() map[string]outcome {
	busy := refused(conflict409, inProgress, "", "").decided()
	return fill(map[string]outcome{
		"create":             refused(conflict409, "already", "", "").decided(),
		"values":             acc("", "", "stored; rendered when it is activated"),
		"activate":           refused(bad400, "has no bundle yet", "", ""),
		"deactivate":         acc("", "", "already inactive: nothing to do"),
		"pause":              refused(bad400, "inactive -> paused", "", ""),
		"accepted":           acc("", "", "stored; checked against a render when it is activated"),
		"source":             busy,
		"labels":             acc("", "", "stored"),
		"phase":              noPhase,
		"put":                acc("", "", "fields replaced; nothing to apply"),
		"put-decommissioned": refused(conflict409, "forceDelete=true", "", "").decided(),
		"delete":             refused(conflict409, "forceDelete=true", "", "").decided(),
		"delete-force":       acc("gone", "none", "the registration is abandoned, the service deleted"),
		"rollback":           noRollbk,
		"supervisor-upgrade": {Code: http.StatusOK, Msg: "not listed", Note: "nothing of it on the Supervisor"},
		"auto-upgrade":       acc("", "", "stored; an inactive service is not upgraded automatically").decided(),
		"auto-rollback":      busy,
		"reconcile":          acc("", "", "nothing is applied while inactive").code(http.StatusOK),
		"rollout":            busy,
	}, "inactive/Unresolved", "none")
}

// inactiveCells: registered, never activated; status Unresolved or Ready.
func inactiveCells(status string) map[string]outcome {
	end := "inactive/" + status
	return fill(map[string]outcome{
		"create":             dupe,
		"values":             acc("", "", "stored; rendered when it is activated"),
		"activate":           acc("active/Healthy", "v1", "acceptance checked against a fresh render, resources applied (phase Installing)"),
		"deactivate":         acc("", "", "already inactive: nothing to do"),
		"pause":              refused(bad400, "inactive -> paused", "", ""),
		"accepted":           acc("inactive/Ready", "none", "acceptance checked against a fresh render: Ready"),
		"source":             acc2("inactive/Unresolved", "none", "the version changes, nothing is applied; activation needs the new version's acceptance (like a fresh registration)"),
		"labels":             acc("", "", "stored"),
		"phase":              noPhase,
		"put":                acc("", "", "fields replaced; nothing to apply"),
		"put-decommissioned": acc("gone", "none", "as DELETE"),
		"delete":             gone202,
		"delete-force":       forced,
		"rollback":           noRollbk,
		"supervisor-upgrade": {Code: http.StatusOK, Msg: "not listed", Note: "nothing of it on the Supervisor"},
		"auto-upgrade":       acc("", "", "stored; an inactive service is not upgraded automatically").decided(),
		"auto-rollback":      acc2("inactive/Unresolved", "none", "as PATCH source: the version changes, nothing applied (so nothing fails)"),
		"reconcile":          acc("", "", "nothing is applied while inactive").code(http.StatusOK),
		"rollout":            acc2("inactive/Unresolved", "none", "as PATCH source: nothing to roll out while inactive").decided(),
	}, end, "none")
}

func downloadFailedCells() map[string]outcome {
	cells := inactiveCells("Unhealthy")
	for k, o := range cells {
		o.Version = "none"
		if o.End == "inactive/Ready" || o.End == "inactive/Unresolved" || o.End == "active/Healthy" {
			o.End = "inactive/Unhealthy"
		}
		cells[k] = o
	}
	nothing := refused(bad400, noBundle, "inactive/Unhealthy", "none")
	nothing.Version = "none"
	cells["create"] = outcome{Code: http.StatusOK, End: "inactive/Unhealthy", Version: "none", Targets: "none", Decided: true,
		Note: "a new registration of the same source; the failed one stays until deleted"}
	cells["activate"], cells["source"], cells["auto-rollback"], cells["rollout"] = nothing, nothing, nothing, nothing
	cells["accepted"] = outcome{Code: accepted202, End: "inactive/Unhealthy", Version: "none", Targets: "none", Note: "stored; nothing to check it against"}
	return cells
}

func deactivatedCells() map[string]outcome {
	cells := inactiveCells("Ready")
	cells["activate"] = acc("active/Healthy", "v1", "re-activation applies the resources again")
	cells["supervisor-upgrade"] = outcome{Code: http.StatusOK, Msg: "not listed", Note: "nothing of it on the Supervisor", Decided: true}
	return fill(cells, "inactive/Ready", "none")
}

func installingCells() map[string]outcome {
	busy := refused(conflict409, inProgress, "", "")
	return fill(map[string]outcome{
		"create":             dupe,
		"values":             busy.decided(),
		"activate":           acc("", "", "already active: the acceptance is stored, the installation goes on"),
		"deactivate":         busy,
		"pause":              busy,
		"accepted":           acc("", "", "stored"),
		"source":             busy,
		"labels":             acc("", "", "stored"),
		"phase":              busy.decided(),
		"put":                acc("", "", "nothing changed"),
		"put-decommissioned": refused(conflict409, "forceDelete=true", "", "").decided(),
		"delete":             refused(conflict409, "forceDelete=true", "", ""),
		"delete-force":       acc("gone", "none", "the installation is abandoned; what it applied is removed"),
		"rollback":           noRollbk,
		"supervisor-upgrade": {Code: http.StatusOK, Msg: "not listed", Note: "its Supervisors are recorded once its resources are applied"},
		"auto-upgrade":       acc2("active/Healthy", "v2", "once installed, upgraded to the newest compatible registered version"),
		"auto-rollback":      busy,
		"reconcile":          acc("", "", "the installation applies it").code(http.StatusOK),
		"rollout":            busy,
	}, "active/Healthy", "v1")
}

func healthyCells() map[string]outcome {
	return fill(map[string]outcome{
		"create":             dupe,
		"values":             acc("", "", "rendered and applied (phase Editing)"),
		"activate":           acc("", "", "already active: nothing to do"),
		"deactivate":         acc("inactive/Ready", "none", "phase Uninstalling: the resources it created are removed"),
		"pause":              acc("paused/Healthy", "v1", "the controllers skip it"),
		"accepted":           acc("", "", "stored"),
		"source":             acc2("active/Healthy", "v2", "upgrade: checks, Maintenance/Upgrading, resources moved to 2.0.0"),
		"labels":             acc("", "", "stored"),
		"phase":              acc("", "", "the configuration is re-applied (phase Configuring)"),
		"put":                acc("", "", "nothing changed"),
		"put-decommissioned": acc("gone", "none", "as DELETE"),
		"delete":             gone202,
		"delete-force":       forced,
		"rollback":           noRollbk,
		"supervisor-upgrade": {Code: http.StatusOK, Msg: "blocked", Note: "the package allows <9.5.0.0: the upgrade would break it"},
		"auto-upgrade":       acc2("active/Healthy", "v2", "upgraded to the newest compatible registered version"),
		"auto-rollback":      acc("active/Healthy", "v1", "the upgrade fails on one Supervisor; rolled back to 1.0.0 at once"),
		"reconcile":          acc("", "", "the controllers restore it").code(http.StatusOK),
		"rollout":            acc2("active/Healthy", "v2", "us-west-1 first, then the rest"),
	}, "active/Healthy", "v1")
}

func unhealthyCells() map[string]outcome {
	cells := healthyCells()
	for k, o := range cells {
		switch o.End {
		case "active/Healthy":
			o.End = "active/Unhealthy"
		case "paused/Healthy":
			o.End = "paused/Unhealthy"
		}
		cells[k] = o
	}
	cells["auto-upgrade"] = acc2("active/Unhealthy", "v2", "upgraded to the newest compatible registered version (an upgrade may fix it)")
	cells["auto-rollback"] = acc2("active/Unhealthy", "v1", "the upgrade fails on one Supervisor; the automatic rollback moves every resource back to 1.0.0 but fails on the GlobalRole that was already unhealthy: the rollback ends Failed, the service Unhealthy, still recorded at 2.0.0 (a retried rollback finishes it)").decided()
	cells["source"] = acc2("active/Unhealthy", "v2", "an upgrade may fix it: it runs (the GlobalRole stays unhealthy)")
	cells["rollout"] = acc("active/Maintenance", "partial", "the canary wave (us-west-1) moves but is not Healthy: the rollout holds before the rest").decided()
	return cells
}

func upgradingCells() map[string]outcome {
	busy := refused(conflict409, inProgress, "", "")
	cells := fill(map[string]outcome{
		"create":             dupe,
		"values":             busy.decided(),
		"activate":           acc("", "", "already active: nothing to do"),
		"deactivate":         busy,
		"pause":              busy,
		"accepted":           acc("", "", "stored"),
		"source":             acc("", "", "the upgrade under way already goes there: nothing new"),
		"labels":             acc("", "", "stored"),
		"phase":              busy.decided(),
		"put":                acc("", "", "nothing changed"),
		"put-decommissioned": refused(conflict409, "forceDelete=true", "", "").decided(),
		"delete":             refused(conflict409, "forceDelete=true", "", ""),
		"delete-force":       acc("gone", "none", "the upgrade is abandoned; what it reaches is removed"),
		"rollback":           refused(conflict409, inProgress, "", ""),
		"supervisor-upgrade": {Code: http.StatusOK, Msg: "blocked", Note: "the package allows <9.5.0.0"},
		"auto-upgrade":       acc("", "", "already upgrading to the newest version"),
		"auto-rollback":      acc("", "", "stored; the upgrade under way succeeds"),
		"reconcile":          acc("", "", "restored once maintenance ends").code(http.StatusOK),
		"rollout":            acc("", "", "the upgrade under way already goes there: nothing new"),
	}, "active/Healthy", "v2")
	for k, o := range cells {
		if o.End != "gone" {
			o.Version = "2.0.0"
			cells[k] = o
		}
	}
	return cells
}

func upgradeFailedCells() map[string]outcome {
	// A partial upgrade leaves it Unhealthy, held in maintenance until a
	// rollback or a retry with the same source (decisions.md, "A partially
	// failed upgrade stays in maintenance").
	maint := refused(conflict409, "is in maintenance after a partial upgrade to 2.0.0", "", "")
	cells := fill(map[string]outcome{
		"create":             dupe,
		"values":             maint.decided(),
		"activate":           acc("", "", "already active: nothing to do"),
		"deactivate":         maint.decided(),
		"pause":              maint.decided(),
		"accepted":           acc("", "", "stored"),
		"source":             acc("", "", "the upgrade is retried (and fails again while the Supervisor refuses)"),
		"labels":             acc("", "", "stored"),
		"phase":              maint.decided(),
		"put":                acc("", "", "nothing changed"),
		"put-decommissioned": acc("gone", "none", "as DELETE"),
		"delete":             gone202,
		"delete-force":       forced,
		"rollback":           acc("active/Healthy", "v1", "leaves the maintenance: 1.0.0 is restored"),
		"supervisor-upgrade": {Code: http.StatusOK, Msg: "blocked", Note: "the package allows <9.5.0.0"},
		"auto-upgrade":       acc("", "", "stored; a failed upgrade is not retried automatically").decided(),
		"auto-rollback":      acc("active/Healthy", "v1", "the retried upgrade fails; rolled back to 1.0.0 at once"),
		"reconcile":          acc("", "", "the controllers skip a service in maintenance").code(http.StatusOK),
		"rollout":            acc("", "", "the upgrade is retried in waves (and fails again)"),
	}, "active/Unhealthy", "partial")
	for k, o := range cells {
		if o.End == "active/Unhealthy" && o.Version == "" {
			o.Version = "2.0.0"
			cells[k] = o
		}
	}
	return cells
}

func unavailableCells() map[string]outcome {
	return fill(map[string]outcome{
		"create":             dupe,
		"values":             acc("", "", "rendered; applied where reachable, the rest retried"),
		"activate":           acc("", "", "already active: nothing to do"),
		"deactivate":         acc("inactive/Unhealthy", "only:Secret", "what it reaches is removed, the rest retried until the step's bound (30s); past it Unhealthy, still inactive (Unavailable is an active service's status)").decided(),
		"pause":              acc("paused/Unavailable", "v1", "the controllers skip it"),
		"accepted":           acc("", "", "stored"),
		"source":             acc("", "", "the pre-checks cannot stage on the Supervisor: the upgrade does not start"),
		"labels":             acc("", "", "stored"),
		"phase":              acc("", "", "re-applied where reachable"),
		"put":                acc("", "", "nothing changed"),
		"put-decommissioned": acc("decommissioned/Unhealthy", "only:Secret", "as DELETE").decided(),
		"delete":             acc("decommissioned/Unhealthy", "only:Secret", "what it reaches is removed, the rest retried until the step's bound (30s); past it the operation is Stuck and the service Unhealthy (Unavailable is an active service's status); forceDelete=true starts it again").decided(),
		"delete-force":       acc("gone", "only:Secret", "what it reaches is removed; the unreachable Secret is listed as an orphan"),
		"rollback":           noRollbk,
		"supervisor-upgrade": {Code: http.StatusOK, Msg: "blocked", Note: "the package allows <9.5.0.0"},
		"auto-upgrade":       acc("", "", "an unavailable service is not upgraded automatically").decided(),
		"auto-rollback":      acc("", "", "the pre-checks cannot stage on the Supervisor: the upgrade does not start"),
		"reconcile":          acc("", "", "the controllers restore it (its target answers)").code(http.StatusOK),
		"rollout":            acc("active/Unavailable", "v1", "wave 1 (us-west-1) passes its gate and moves; wave 2's gate cannot reach the Supervisor: the rollout waits (Running, the reason names the Supervisor and the error, tried again every poll); past the gate timeout (5s) the wave fails and wave 1 is rolled back, the version quarantined; the service is back on 1.0.0, still Unavailable").decided(),
	}, "active/Unavailable", "v1")
}

func pausedCells() map[string]outcome {
	paused := refused(conflict409, isPaused, "", "").decided()
	return fill(map[string]outcome{
		"create":             dupe,
		"values":             acc("", "", "stored; applied when it resumes").decided(),
		"activate":           acc("active/Healthy", "v1", "resumed: the controllers reconcile it again"),
		"deactivate":         refused(bad400, "paused -> inactive", "", ""),
		"pause":              acc("", "", "already paused: nothing to do"),
		"accepted":           acc("", "", "stored"),
		"source":             paused,
		"labels":             acc("", "", "stored"),
		"phase":              noPhase,
		"put":                acc("", "", "nothing changed"),
		"put-decommissioned": acc("gone", "none", "as DELETE"),
		"delete":             gone202,
		"delete-force":       forced,
		"rollback":           refused(conflict409, "is paused: resume it before rolling back", "", "").decided(),
		"supervisor-upgrade": {Code: http.StatusOK, Msg: "blocked", Note: "the package allows <9.5.0.0"},
		"auto-upgrade":       acc("", "", "a paused service is not upgraded automatically"),
		"auto-rollback":      paused,
		"reconcile":          acc("", "v1-role", "not restored while paused").code(http.StatusOK),
		"rollout":            paused,
	}, "paused/Healthy", "v1")
}

func deleteFailedCells() map[string]outcome {
	del := refused(conflict409, beingDel, "", "")
	return fill(map[string]outcome{
		"create":             refused(conflict409, beingDel, "", "").decided(),
		"values":             del,
		"activate":           del,
		"deactivate":         del,
		"pause":              del,
		"accepted":           del,
		"source":             del,
		"labels":             del,
		"phase":              noPhase,
		"put":                del,
		"put-decommissioned": acc("", "", "as DELETE"),
		"delete":             acc("", "", "already decommissioned; the target still refuses: it stays Unhealthy"),
		"delete-force":       acc("gone", "none", "the refused GlobalRole is released (finalizer stripped) and listed as an orphan").decided(),
		"rollback":           noRollbk,
		"supervisor-upgrade": {Code: http.StatusOK, Msg: "not listed", Note: "being deleted: nothing of it to keep working", Decided: true},
		"auto-upgrade":       del,
		"auto-rollback":      del,
		"reconcile":          acc("", "", "the target refuses that deletion too: nothing changes").code(http.StatusOK),
		"rollout":            del,
	}, "decommissioned/Unhealthy", "only:GlobalRole")
}
