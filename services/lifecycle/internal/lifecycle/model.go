// Package lifecycle is the domain of the lifecycle service: VCF Service
// entities, their state machine and the orchestration of installs,
// upgrades and deletions. It knows nothing of gRPC.
package lifecycle

import "time"

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

// IDPrefix starts every service id.
const IDPrefix = "urn:vcloud:entity:broadcom:vcfService:"

// Service is the stored VCF Service entity.
type Service struct {
	ID             string            `json:"id"`
	Vendor         string            `json:"vendor"`
	Name           string            `json:"name"`
	Version        string            `json:"version"`
	Source         string            `json:"source"`
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
	BuiltIn        bool              `json:"builtIn,omitempty"`
	Namespace      string            `json:"namespace,omitempty"`
	CreatedAt      time.Time         `json:"createdAt"`
	UpdatedAt      time.Time         `json:"updatedAt"`

	// Revision is the store revision the entity was read at; not stored.
	Revision int64 `json:"-"`
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
