package manager

import (
	"context"
	"log/slog"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// ports are the manager's ports, from which it builds each step's own
// ports struct: a step is handed only what it reaches (steps/ports.go).
// Store is the core itself, so a step's commit reaches watchers and the
// controllers' queue like any other.
type ports struct {
	Repo              lifecycle.Repository
	Bundles           lifecycle.Bundles
	Peers             lifecycle.Peers
	Driver            target.Driver
	Store             steps.Writer
	Log               *slog.Logger
	Now               func() time.Time
	TargetConcurrency int
}

// RenderPorts are what rendering reads.
func (p *ports) RenderPorts() steps.RenderPorts {
	return steps.RenderPorts{Inventory: p.Repo, Renderer: p.Peers.Renderer}
}

// CheckPorts are what a compatibility evaluation reads.
func (p *ports) CheckPorts() steps.CheckPorts {
	return steps.CheckPorts{Inventory: p.Repo, Compatibility: p.Peers.Compatibility}
}

// HookPorts are what a pre-check hook needs.
func (p *ports) HookPorts() steps.HookPorts {
	return steps.HookPorts{Repo: p.Repo, Driver: p.Driver, Precheck: p.Peers.Precheck}
}

// PrecheckPorts are what staging and the dynamic pre-checks reach.
func (p *ports) PrecheckPorts() steps.PrecheckPorts {
	return steps.PrecheckPorts{Inventory: p.Repo, Driver: p.Driver, Precheck: p.Peers.Precheck, Store: p.Store,
		Log: p.Log, Now: p.Now, Concurrency: p.TargetConcurrency}
}

// ApplyPorts are what applying and moving resources reaches.
func (p *ports) ApplyPorts() steps.ApplyPorts {
	return steps.ApplyPorts{Repo: p.Repo, Driver: p.Driver, Renderer: p.Peers.Renderer, Store: p.Store,
		Log: p.Log, Now: p.Now, Concurrency: p.TargetConcurrency}
}

// RemovePorts are what removing resources and sweeping orphans reaches.
func (p *ports) RemovePorts() steps.RemovePorts {
	return steps.RemovePorts{Repo: p.Repo, Driver: p.Driver, Store: p.Store, Log: p.Log, Concurrency: p.TargetConcurrency}
}

// RecordPorts are what writing resource records needs.
func (p *ports) RecordPorts() steps.RecordPorts {
	return steps.RecordPorts{Repo: p.Repo, Store: p.Store}
}

// parallel runs fn for 0..n-1 with at most TargetConcurrency target calls
// at once (steps.Parallel).
func (p *ports) parallel(ctx context.Context, n int, fn func(context.Context, int) error) error {
	return steps.Parallel(ctx, p.Log, p.TargetConcurrency, n, fn)
}
