package lifecycle

import (
	"maps"
	"time"
)

// OpRollout is an upgrade that moves a service's Supervisors in waves
// (internal/ops/rollout.go); internal/fleet holds its rules.
const OpRollout = "rollout"

// Rollout policies after a wave's failed-target budget is exceeded.
const (
	OnFailureRollback = "rollback"
	OnFailurePause    = "pause"
)

// RolloutStrategy is how an upgrade moves across a service's Supervisors:
// waves in order, each gated (checks, windows, approval) and verified
// (every target Healthy at the new generation for the soak time) before
// the next starts.
type RolloutStrategy struct {
	// Name identifies a stored strategy (the provider's, by name); empty
	// for one given inline with an upgrade.
	Name  string `json:"name,omitempty"`
	Waves []Wave `json:"waves"`
	// GateTimeout bounds how long a target may take, once applied, to be
	// Healthy at the new generation, and how long a wave waits for a gate
	// that cannot run on a target that does not answer (0: 10 minutes).
	GateTimeout time.Duration `json:"gateTimeout,omitempty"`
}

// Wave is one step of a rollout.
type Wave struct {
	Name string `json:"name,omitempty"`
	// Targets: the Supervisors in any of these regions, with these names,
	// or carrying all these inventory labels; Rest takes every target no
	// earlier wave took (and no later wave names).
	Regions     []string          `json:"regions,omitempty"`
	Supervisors []string          `json:"supervisors,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Rest        bool              `json:"rest,omitempty"`
	// MaxConcurrent bounds the targets moving at once (0: all of the
	// wave).
	MaxConcurrent int `json:"maxConcurrent,omitempty"`
	// Soak is how long every target of the wave must stay Healthy at the
	// new generation before the next wave starts.
	Soak time.Duration `json:"soak,omitempty"`
	// Approval holds the wave until an administrator approves it.
	Approval bool `json:"approval,omitempty"`
	// MaxFailures is the wave's failed-target budget; past it, OnFailure
	// (rollback, the default, or pause).
	MaxFailures int    `json:"maxFailures,omitempty"`
	OnFailure   string `json:"onFailure,omitempty"`
}

// RolloutStrategies are the provider's named strategies; the one named
// Default applies to every upgrade that names none (a request may still
// ask for none).
type RolloutStrategies struct {
	Strategies []RolloutStrategy `json:"strategies,omitempty"`
	Default    string            `json:"default,omitempty"`
}

// RolloutRequest asks an upgrade to roll out: a strategy given inline, or
// the name of a stored one ("" with no strategy: the service's or the
// provider's default, if any).
type RolloutRequest struct {
	Strategy *RolloutStrategy `json:"strategy,omitempty"`
	Name     string           `json:"name,omitempty"`
	// None asks for the spec's all-at-once upgrade even when a default
	// strategy applies.
	None bool `json:"none,omitempty"`
}

// Rollout states (RolloutState.State).
const (
	RolloutRunning          = "Running"
	RolloutWaitingApproval  = "WaitingApproval"
	RolloutPaused           = "Paused"
	RolloutRollingBack      = "RollingBack"
	RolloutSucceeded        = "Succeeded"
	RolloutRolledBack       = "RolledBack"
	RolloutRollbackRefused  = "RollbackRefused"
	RolloutAbortedByRequest = "Aborted"
	RolloutFailed           = "Failed"
)

// Target states (TargetState.State).
const (
	TargetPending       = "Pending"
	TargetWaitingWindow = "WaitingForWindow"
	TargetBlocked       = "Blocked"
	TargetMoving        = "Moving"
	TargetVerifying     = "Verifying"
	TargetDone          = "Done"
	TargetFailed        = "Failed"
	TargetRollingBack   = "RollingBack"
	TargetRolledBack    = "RolledBack"
)

// RolloutState is a rollout as it runs, kept on its operation (the one
// writer is the operation's worker): the waves, and each target's wave,
// version, state and message.
type RolloutState struct {
	Strategy    RolloutStrategy `json:"strategy"`
	FromVersion string          `json:"fromVersion"`
	ToVersion   string          `json:"toVersion"`
	State       string          `json:"state"`
	Reason      string          `json:"reason,omitempty"`
	// Wave is the index of the wave under way (len(Waves) when all are
	// done); RollbackWave the one being rolled back.
	Wave         int           `json:"wave"`
	RollbackWave int           `json:"rollbackWave,omitempty"`
	Waves        []WaveState   `json:"waves"`
	Targets      []TargetState `json:"targets"`
	// Shared are the resources that are not on one Supervisor (VCF
	// Automation, vCenter, region-linked), by the wave they move with.
	Shared map[string]int `json:"shared,omitempty"`
	// RollbackStartedAt is when the rollout turned to its rollback.
	RollbackStartedAt time.Time `json:"rollbackStartedAt,omitzero"`
}

// WaveState is one wave as it runs.
type WaveState struct {
	Name       string    `json:"name"`
	State      string    `json:"state"` // Pending, WaitingApproval, Running, Soaking, Done, Failed, RollingBack, RolledBack
	Targets    int       `json:"targets"`
	ApprovedBy string    `json:"approvedBy,omitempty"`
	StartedAt  time.Time `json:"startedAt,omitzero"`
	DoneAt     time.Time `json:"doneAt,omitzero"`
	// RollbackStartedAt is when the wave's targets began moving back.
	RollbackStartedAt time.Time `json:"rollbackStartedAt,omitzero"`
	// Checked: the wave's gates (compatibility, hook, pre-checks) ran and
	// passed (or were overridden); Blocked: they ran and blocked it.
	Checked bool `json:"checked,omitempty"`
	Blocked bool `json:"blocked,omitempty"`
	// SharedMoved: the shared resources of the wave moved (with its first
	// targets).
	SharedMoved bool `json:"sharedMoved,omitempty"`
	// Resumes is how many resumes the wave has acted on.
	Resumes int `json:"resumes,omitempty"`
	// GateWaitingSince is when the wave's gate first could not run on
	// one of its targets (it does not answer); zero once it ran. Past the
	// strategy's gate timeout those targets fail.
	GateWaitingSince time.Time `json:"gateWaitingSince,omitzero"`
}

// TargetState is one Supervisor in a rollout.
type TargetState struct {
	Supervisor string `json:"supervisor"`
	Region     string `json:"region,omitempty"`
	Wave       int    `json:"wave"`
	Version    string `json:"version"`
	State      string `json:"state"`
	Message    string `json:"message,omitempty"`
	// Notes are the WARNING and INFO results of its gates.
	Notes     []ErrorDetail `json:"notes,omitempty"`
	MovedAt   time.Time     `json:"movedAt,omitzero"`
	HealthyAt time.Time     `json:"healthyAt,omitzero"`
	// WindowOpens is when its maintenance window next opens (while it
	// waits for one).
	WindowOpens time.Time `json:"windowOpens,omitzero"`
}

// RolloutSummary is what the service record shows of a running (or the
// last) rollout, for lists, FIQL and watches; the detail is on the
// operation (GET …/rollout).
type RolloutSummary struct {
	OperationID string `json:"operationId"`
	ToVersion   string `json:"toVersion"`
	State       string `json:"state"`
	Wave        int    `json:"wave"`
	Waves       int    `json:"waves"`
	Done        int    `json:"done"`
	Failed      int    `json:"failed"`
	Waiting     int    `json:"waiting"`
	Total       int    `json:"total"`
}

// RolloutControl is what administrators asked of a running rollout,
// kept on the service record (written by requests, read by the worker).
type RolloutControl struct {
	OperationID string `json:"operationId"`
	Paused      bool   `json:"paused,omitempty"`
	Aborted     bool   `json:"aborted,omitempty"`
	// Approved are the waves approved, by index, with who approved them.
	Approved map[int]string `json:"approved,omitempty"`
	// Overridden are the waves whose gate ERRORs an administrator
	// overrode, with the reason.
	Overridden map[int]string `json:"overridden,omitempty"`
	// Resumes counts the resumes asked: a wave paused by its failures or
	// blocked by its checks retries them when it sees a new one.
	Resumes int    `json:"resumes,omitempty"`
	By      string `json:"by,omitempty"`
}

// Clone is a deep copy.
func (c *RolloutControl) Clone() *RolloutControl {
	out := *c
	out.Approved = maps.Clone(c.Approved)
	out.Overridden = maps.Clone(c.Overridden)
	return &out
}

// Quarantine marks a catalog version a rollout failed on: automatic
// upgrades skip it and an upgrade to it needs an administrator's override
// until an administrator clears it.
type Quarantine struct {
	Reason  string    `json:"reason"`
	At      time.Time `json:"at"`
	Rollout string    `json:"rollout,omitempty"` // the rollout's operation id
	By      string    `json:"by,omitempty"`
}

// MaintenanceWindow is a Supervisor's weekly window, in a stated time
// zone: moves start only while it is open.
type MaintenanceWindow struct {
	// Days the window opens on ("Mon".."Sun"; empty: every day).
	Days []string `json:"days,omitempty"`
	// Start is the opening time of day ("22:00"), Duration how long it
	// stays open.
	Start    string        `json:"start"`
	Duration time.Duration `json:"duration"`
	TimeZone string        `json:"timeZone"`
}
