// Package lifecycle is the domain of the lifecycle service: VCF Service
// entities, their state machine and the durable orchestration of installs,
// configuration changes, upgrades, rollbacks and deletions. It knows
// nothing of gRPC; it reaches the compatibility, renderer and precheck
// services through their generated clients and the targets through
// target.Driver.
package lifecycle

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Lifecycle states (api.md "Lifecycle states").
const (
	StateInactive       = "inactive"
	StateActive         = "active"
	StatePaused         = "paused"
	StateDecommissioned = "decommissioned"
)

// Status values (api.md "Status values").
const (
	StatusReady       = "Ready"
	StatusUnresolved  = "Unresolved"
	StatusHealthy     = "Healthy"
	StatusBusy        = "Busy"
	StatusUnhealthy   = "Unhealthy"
	StatusMaintenance = "Maintenance"
	StatusUnavailable = "Unavailable"
)

// Phase values (api.md "Phase values").
const (
	PhaseInstalling   = "Installing"
	PhaseResolving    = "Resolving"
	PhaseUpgrading    = "Upgrading"
	PhaseConfiguring  = "Configuring"
	PhaseUninstalling = "Uninstalling"
	PhaseDeleting     = "Deleting"
	PhaseEditing      = "Editing"
	PhasePublishing   = "Publishing"
)

// Phases lists the accepted phase values.
var Phases = []string{PhaseInstalling, PhaseResolving, PhaseUpgrading, PhaseConfiguring, PhaseUninstalling, PhaseDeleting, PhaseEditing, PhasePublishing}

// Error detail types and severities (api.md `ErrorDetail`).
const (
	ErrTypeDownload      = "DownloadTask"
	ErrTypeInstall       = "InstallTask"
	ErrTypeConfiguration = "ConfigurationTask"
	ErrTypeResource      = "CustomResource"

	SeverityError = "ERROR"
	SeverityWarn  = "WARN"
	SeverityInfo  = "INFO"
)

// IDPrefix starts every service id.
const IDPrefix = "urn:vcloud:entity:broadcom:vcfService:"

// CheckID refuses what cannot be a service id (NotFound, naming the form
// ids take).
func CheckID(id string) error {
	if !strings.HasPrefix(id, IDPrefix) {
		return fmt.Errorf("service %q: ids look like %s<uuid>: %w", id, IDPrefix, ErrNotFound)
	}
	return nil
}

// Namespace is a service's per-Supervisor namespace: svc-<refName, dots as
// dashes>.
func Namespace(refName string) string {
	return "svc-" + strings.ReplaceAll(strings.ToLower(refName), ".", "-")
}

// FinalizerCleanup marks a resource whose target must be cleaned up before
// the resource record goes away.
const FinalizerCleanup = "services.vcfa.broadcom.com/cleanup"

// Service is the stored VCF Service entity.
type Service struct {
	ID             string            `json:"id"`
	Vendor         string            `json:"vendor"`
	Name           string            `json:"name"`
	Version        string            `json:"version"`
	Source         string            `json:"source"`
	Digest         string            `json:"digest,omitempty"`
	Status         string            `json:"status"`
	LifecycleState string            `json:"lifecycleState"`
	Phase          string            `json:"phase,omitempty"`
	Values         OverlayValues     `json:"values"`
	Accepted       Accepted          `json:"accepted"`
	Reconfigure    []string          `json:"reconfigure,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Locations      map[string]string `json:"locations,omitempty"`
	Tenants        map[string]string `json:"tenants,omitempty"`
	AutoUpgrade    bool              `json:"autoUpgrade,omitempty"`
	AutoRollback   bool              `json:"autoRollback,omitempty"`
	// AutoUpgradePrereleases lets automatic upgrades pick pre-release
	// versions (off: only releases are picked).
	AutoUpgradePrereleases bool   `json:"autoUpgradePrereleases,omitempty"`
	BuiltIn                bool   `json:"builtIn,omitempty"`
	Namespace              string `json:"namespace,omitempty"`
	// Supervisors are the Supervisors the installed version runs on, by
	// serviceSupervisors, recorded when its resources are applied.
	Supervisors []string  `json:"supervisors,omitempty"`
	CreatedAt   time.Time `json:"createdAt"`
	UpdatedAt   time.Time `json:"updatedAt"`

	// ErrorDetails are the structured errors of State.
	ErrorDetails []ErrorDetail `json:"errorDetails,omitempty"`
	// PreCheck is the last dynamic pre-check report.
	PreCheck *PreCheckReport `json:"preCheck,omitempty"`
	// ActiveOperation is the id of the operation running on the service;
	// at most one runs at a time.
	ActiveOperation string `json:"activeOperation,omitempty"`
	// Progress of the running (or last) operation.
	Progress *Progress `json:"progress,omitempty"`
	// Maintenance is set while an upgrade or rollback freezes the service:
	// controllers skip its resources.
	Maintenance bool `json:"maintenance,omitempty"`
	// LastKnownGood is the last version that was active and Healthy.
	LastKnownGood string `json:"lastKnownGood,omitempty"`
	// PreviousVersion is the version an upgrade replaced, kept so a
	// rollback can restore it.
	PreviousVersion *VersionRef `json:"previousVersion,omitempty"`
	// UpgradeBlockedFor records a version whose automatic upgrade failed,
	// so autoUpgrade does not retry it in a loop.
	UpgradeBlockedFor string `json:"upgradeBlockedFor,omitempty"`
	// RolloutStrategy names the provider strategy this service's upgrades
	// roll out with ("": the provider's default, if any).
	RolloutStrategy string `json:"rolloutStrategy,omitempty"`
	// Rollout summarises the running (or last) rollout; RolloutControl is
	// what administrators asked of the running one.
	Rollout        *RolloutSummary `json:"rollout,omitempty"`
	RolloutControl *RolloutControl `json:"rolloutControl,omitempty"`

	// Revision is the store revision the entity was read at; not stored.
	Revision int64 `json:"-"`
	// PendingHistory are finished operations to record with this write.
	PendingHistory []*Operation `json:"-"`
}

// VersionRef names a version of a service's bundle.
type VersionRef struct {
	Version string        `json:"version"`
	Digest  string        `json:"digest"`
	Source  string        `json:"source"`
	Values  OverlayValues `json:"values"`
}

// NameOrID names the service in messages: its package name, or its id
// before its bundle was registered.
func (s *Service) NameOrID() string {
	if s.Name != "" {
		return s.Name
	}
	return s.ID
}

// Clone returns a deep copy.
func (s *Service) Clone() *Service {
	c := *s
	c.PendingHistory = nil
	c.Labels = maps.Clone(s.Labels)
	c.Locations = maps.Clone(s.Locations)
	c.Tenants = maps.Clone(s.Tenants)
	c.Reconfigure = slices.Clone(s.Reconfigure)
	c.Supervisors = slices.Clone(s.Supervisors)
	c.ErrorDetails = slices.Clone(s.ErrorDetails)
	c.Accepted.AccessGrants = CloneJSON(s.Accepted.AccessGrants)
	// PreCheck is shared: a report is replaced whole, never edited, and
	// copying thousands of resource checks on every read of a big service
	// was a visible cost of its activation.
	if s.Progress != nil {
		p := *s.Progress
		c.Progress = &p
	}
	if s.PreviousVersion != nil {
		v := *s.PreviousVersion
		c.PreviousVersion = &v
	}
	if s.Rollout != nil {
		r := *s.Rollout
		c.Rollout = &r
	}
	if s.RolloutControl != nil {
		c.RolloutControl = s.RolloutControl.Clone()
	}
	return &c
}

func CloneJSON(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch t := v.(type) {
		case map[string]any:
			out[k] = CloneJSON(t)
		case []any:
			out[k] = slices.Clone(t)
		default:
			out[k] = v
		}
	}
	return out
}

// OverlayValues are the stored value layers, base64-encoded YAML each.
type OverlayValues struct {
	PlatformOverlay string `json:"platformOverlay,omitempty"`
	VendorOverlay   string `json:"vendorOverlay,omitempty"`
	UserOverwrite   string `json:"userOverwrite,omitempty"`
	Effective       string `json:"effective,omitempty"`
}

// Accepted is the administrator's acceptance.
type Accepted struct {
	EULA         bool           `json:"eula"`
	Signatures   bool           `json:"signatures"`
	AccessGrants map[string]any `json:"accessGrants,omitempty"`
}

// ErrorDetail is one structured error.
type ErrorDetail struct {
	Type     string `json:"type"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// PreCheckReport is seed 002's aggregated dynamic pre-check report.
type PreCheckReport struct {
	Status         string          `json:"preCheckStatus"`
	ResourceChecks []ResourceCheck `json:"resourceChecks"`
}

// ResourceCheck is one resource's pre-checks.
type ResourceCheck struct {
	Type       string  `json:"type"`
	Name       string  `json:"name"`
	Status     string  `json:"status"`
	Supervisor string  `json:"supervisor,omitempty"`
	Checks     []Check `json:"checks"`
}

// Check is one named pre-check.
type Check struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Message string `json:"message,omitempty"`
}

// Progress is where a running operation is.
type Progress struct {
	OperationID string `json:"operationId"`
	Type        string `json:"type"`
	Step        string `json:"step"`
	Message     string `json:"message,omitempty"`
	Percent     int    `json:"percent"`
	// Outcome is set when the operation ends, so watchers see the end even
	// when nothing else about the service changes.
	Outcome string `json:"outcome,omitempty"`
	// Override is the operation's override, once it let a result through.
	Override *Override `json:"override,omitempty"`
}

// Resource is one custom resource a service manages, as the lifecycle
// service records it.
type Resource struct {
	ServiceID string `json:"serviceId"`
	// ID is unique within the service: kind/supervisor/logical name.
	ID         string         `json:"id"`
	Kind       string         `json:"kind"`
	APIVersion string         `json:"apiVersion"`
	Name       string         `json:"name"`
	Namespace  string         `json:"namespace,omitempty"`
	Region     string         `json:"region,omitempty"`
	Supervisor string         `json:"supervisor,omitempty"`
	Target     target.Key     `json:"target"`
	Doc        map[string]any `json:"doc"`
	// Hash of Doc, to tell reconfigured from unchanged resources.
	Hash         string    `json:"hash"`
	OwnerVersion string    `json:"ownerVersion"`
	Finalizers   []string  `json:"finalizers,omitempty"`
	Status       string    `json:"status"`
	Message      string    `json:"message,omitempty"`
	LastModified time.Time `json:"lastModified"`
	Adopted      bool      `json:"adopted,omitempty"`
	ExternalID   string    `json:"externalId,omitempty"`
	// ReadyConditions mirror the target's resolved ready conditions.
	ReadyConditions map[string]string `json:"readyConditions,omitempty"`
	// Generation is the target object's generation the last apply left
	// (a rollout's health gate accepts only statuses at or after it).
	Generation int64 `json:"generation,omitempty"`
	// Unreachable: the last call to its target did not get through (the
	// resource is Busy; the service shows Unavailable).
	Unreachable bool `json:"unreachable,omitempty"`
}

// Operation types.
const (
	OpRegister   = "register"
	OpActivate   = "activate"
	OpDeactivate = "deactivate"
	OpPause      = "pause"
	OpResume     = "resume"
	OpConfigure  = "configure"
	OpUpgrade    = "upgrade"
	OpRollback   = "rollback"
	OpDelete     = "delete"
)

// Operation outcomes.
const (
	OutcomePending    = "Pending"
	OutcomeRunning    = "Running"
	OutcomeSucceeded  = "Succeeded"
	OutcomeFailed     = "Failed"
	OutcomeRolledBack = "RolledBack"
	OutcomeStuck      = "Stuck"
)

// Step statuses.
const (
	StepPending   = "Pending"
	StepRunning   = "Running"
	StepSucceeded = "Succeeded"
	StepFailed    = "Failed"
	StepSkipped   = "Skipped"
)

// Operation is a durable, step-by-step change of a service. Every step is
// recorded before it acts, so a restarted process resumes where it was.
type Operation struct {
	ID          string          `json:"id"`
	ServiceID   string          `json:"serviceId"`
	ServiceName string          `json:"serviceName,omitempty"`
	Type        string          `json:"type"`
	FromVersion string          `json:"fromVersion,omitempty"`
	ToVersion   string          `json:"toVersion,omitempty"`
	Outcome     string          `json:"outcome"`
	RequestedBy string          `json:"requestedBy,omitempty"`
	StartedAt   time.Time       `json:"startedAt"`
	FinishedAt  time.Time       `json:"finishedAt,omitzero"`
	Steps       []Step          `json:"steps"`
	Params      OperationParams `json:"params"`
	// Orphans lists target resources a force delete left behind.
	Orphans []Orphan `json:"orphans,omitempty"`
	// Notes are everything the operation's checks said (every WARNING
	// and INFO of every step; the ERRORs too when it failed), as the
	// service's errorDetails show them.
	Notes []ErrorDetail `json:"notes,omitempty"`
	// Rollout is a rollout's waves and targets as it runs.
	Rollout *RolloutState `json:"rollout,omitempty"`
	// Override is an administrator's override of the operation's check
	// ERRORs (or of the compatibility constraints, for builtIn).
	Override *Override `json:"override,omitempty"`
	// Accepted is what the request that started an upgrade accepted of
	// the new version (EULA, signatures, access grants).
	Accepted *Accepted `json:"accepted,omitempty"`
	// Attempts counts executions of the current step (retries).
	Attempts int   `json:"attempts,omitempty"`
	Revision int64 `json:"-"`
}

// Override is an administrator's decision, for one operation, that the
// ERROR results of its compatibility check and pre-check hook do not
// block it; Results are the ERRORs it let through, as the checks
// reported them. Signature failures are never overridden.
type Override struct {
	Principal string        `json:"principal"`
	Reason    string        `json:"reason"`
	At        time.Time     `json:"at,omitzero"`
	Results   []CheckResult `json:"results,omitempty"`
}

// Orphan is a target resource left behind by a force delete.
type Orphan struct {
	Kind    string     `json:"kind"`
	Name    string     `json:"name"`
	Target  target.Key `json:"target"`
	Message string     `json:"message"`
}

// OperationParams carry an operation's inputs.
type OperationParams struct {
	Source        string `json:"source,omitempty"`
	TargetVersion string `json:"targetVersion,omitempty"`
	TargetDigest  string `json:"targetDigest,omitempty"`
	Force         bool   `json:"force,omitempty"`
	Automatic     bool   `json:"automatic,omitempty"`
	// Phase the service shows while the operation runs.
	Phase string `json:"phase,omitempty"`
	// Name and Version the create request asked for.
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	// Strategy is the rollout's, resolved when it was asked for.
	Strategy *RolloutStrategy `json:"strategy,omitempty"`
	// QuarantineOverride is an administrator's reason for upgrading to a
	// quarantined version.
	QuarantineOverride string `json:"quarantineOverride,omitempty"`
	// PlanID is the stored plan the upgrade executes; TargetDigest is then
	// the bundle that plan was made for, and no other is installed.
	PlanID string `json:"planId,omitempty"`
	// PriorStatus is the status the service showed before the operation
	// (restored when an upgrade of an inactive service fails).
	PriorStatus string `json:"priorStatus,omitempty"`
}

// Step is one recorded step.
type Step struct {
	Name       string    `json:"name"`
	Status     string    `json:"status"`
	Message    string    `json:"message,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

// Done reports a finished operation.
func (o *Operation) Done() bool {
	switch o.Outcome {
	case OutcomeSucceeded, OutcomeFailed, OutcomeRolledBack:
		return true
	}
	return false
}

// CatalogEntry is one registered bundle version.
type CatalogEntry struct {
	Name         string    `json:"name"`
	Version      string    `json:"version"`
	Source       string    `json:"source"`
	Digest       string    `json:"digest,omitempty"`
	Status       string    `json:"status"`
	Message      string    `json:"message,omitempty"`
	RegisteredAt time.Time `json:"registeredAt"`
	BuiltIn      bool      `json:"builtIn,omitempty"`
	// BuiltInBy records who declared the version built-in.
	BuiltInBy *Override `json:"builtInBy,omitempty"`
	// Constraints are the package's, recorded at registration so planning
	// a path over thousands of versions reads no bundle; nil for entries
	// registered before they were recorded (their bundle says).
	Constraints *Constraints `json:"constraints,omitempty"`
	// Quarantine is set while the version is quarantined.
	Quarantine *Quarantine `json:"quarantine,omitempty"`
	Revision   int64       `json:"-"`
}

// TypeOr is the progress's operation type, or def when there is none.
func (p *Progress) TypeOr(def string) string {
	if p == nil || p.Type == "" {
		return def
	}
	return p.Type
}
