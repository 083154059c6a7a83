package steps

import (
	"log/slog"
	"time"

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
