package steps

import (
	"log/slog"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// The ports of the steps that act on targets and records. Each step takes
// the struct holding only what it reaches, so its signature says what it
// can touch: none of them sees the engine, the queue or the watch hub, and
// only the pre-checks see a peer other than the renderer.

// RecordPorts are what writing resource records needs: the host's writer
// (each commit reaches watchers and controllers) and the repository,
// asked only whether its store takes any number of writes at once.
type RecordPorts struct {
	Repo  lifecycle.Repository
	Store Writer
}

// RemovePorts are what removing resources reaches: the targets (cleaned up
// or released, at most Concurrency calls at once) and the records.
type RemovePorts struct {
	Repo        lifecycle.Repository
	Driver      target.Driver
	Store       Writer
	Log         *slog.Logger
	Concurrency int
}

// ApplyPorts are what applying, moving and removing resources reaches: the
// records, the targets, the renderer (an Overlay's ApplyOverlay), the clock
// stamped on each record and the bound on parallel target calls.
type ApplyPorts struct {
	Repo        lifecycle.Repository
	Driver      target.Driver
	Renderer    lifecycle.Renderer
	Store       Writer
	Log         *slog.Logger
	Now         func() time.Time
	Concurrency int
}

// PrecheckPorts are what the dynamic pre-checks reach: the targets (dry
// runs and facts), the inventory, the precheck service, and the writer for
// the report (Prechecks only).
type PrecheckPorts struct {
	Inventory   InventoryReader
	Driver      target.Driver
	Precheck    lifecycle.Precheck
	Store       Writer
	Log         *slog.Logger
	Now         func() time.Time
	Concurrency int
}

// records narrows the apply ports to the record writes.
func (p ApplyPorts) records() RecordPorts {
	return RecordPorts{Repo: p.Repo, Store: p.Store}
}

// remove narrows the apply ports to what removing resources reaches.
func (p ApplyPorts) remove() RemovePorts {
	return RemovePorts{Repo: p.Repo, Driver: p.Driver, Store: p.Store, Log: p.Log, Concurrency: p.Concurrency}
}

// records narrows the remove ports to the record writes.
func (p RemovePorts) records() RecordPorts {
	return RecordPorts{Repo: p.Repo, Store: p.Store}
}

// Ports are every port the steps reach. The operations and the read side
// each hold one and cut from it, per call, the struct of only what that
// step reaches; no step is handed Ports itself.
type Ports struct {
	Repo        lifecycle.Repository
	Peers       lifecycle.Peers
	Driver      target.Driver
	Store       Writer // nil on the read side, which never writes
	Log         *slog.Logger
	Now         func() time.Time
	Concurrency int
	// Signers is a bundle's signature set (see Terms); nil: none known.
	Signers func(*bundle.Bundle) []string
	// VerifySignatures, when set (trusted keys are configured), must accept
	// a bundle's signatures before its version goes live (SignaturePolicy).
	VerifySignatures func(*bundle.Bundle) error
}

// Render are what rendering reads.
func (p Ports) Render() RenderPorts {
	return RenderPorts{Inventory: p.Repo, Renderer: p.Peers.Renderer}
}

// Check are what a compatibility evaluation reads.
func (p Ports) Check() CheckPorts {
	return CheckPorts{Inventory: p.Repo, Compatibility: p.Peers.Compatibility}
}

// Hook are what a pre-check hook needs.
func (p Ports) Hook() HookPorts {
	return HookPorts{Repo: p.Repo, Driver: p.Driver, Precheck: p.Peers.Precheck}
}

// Precheck are what staging and the dynamic pre-checks reach.
func (p Ports) Precheck() PrecheckPorts {
	return PrecheckPorts{Inventory: p.Repo, Driver: p.Driver, Precheck: p.Peers.Precheck, Store: p.Store,
		Log: p.Log, Now: p.Now, Concurrency: p.Concurrency}
}

// Apply are what applying and moving resources reaches.
func (p Ports) Apply() ApplyPorts {
	return ApplyPorts{Repo: p.Repo, Driver: p.Driver, Renderer: p.Peers.Renderer, Store: p.Store,
		Log: p.Log, Now: p.Now, Concurrency: p.Concurrency}
}

// Remove are what removing resources and sweeping orphans reaches.
func (p Ports) Remove() RemovePorts {
	return RemovePorts{Repo: p.Repo, Driver: p.Driver, Store: p.Store, Log: p.Log, Concurrency: p.Concurrency}
}

// Records are what writing resource records needs.
func (p Ports) Records() RecordPorts {
	return RecordPorts{Repo: p.Repo, Store: p.Store}
}
