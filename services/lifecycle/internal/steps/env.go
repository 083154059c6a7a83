package steps

import (
	"log/slog"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Env is what the steps reach: the ports, the host's writer (so commits
// reach watchers and controllers), the clock, the logger and the bound on
// parallel target calls. Nothing of the engine, the queue or the watch hub.
type Env struct {
	Repo              lifecycle.Repository
	Bundles           lifecycle.Bundles
	Peers             lifecycle.Peers
	Driver            target.Driver
	Store             Writer
	Log               *slog.Logger
	Now               func() time.Time
	TargetConcurrency int
}

// RenderPorts are the Env's ports rendering reads.
func (m *Env) RenderPorts() RenderPorts {
	return RenderPorts{Inventory: m.Repo, Renderer: m.Peers.Renderer}
}

// CheckPorts are the Env's ports a compatibility evaluation reads.
func (m *Env) CheckPorts() CheckPorts {
	return CheckPorts{Inventory: m.Repo, Compatibility: m.Peers.Compatibility}
}

// HookPorts are the Env's ports a pre-check hook needs.
func (m *Env) HookPorts() HookPorts {
	return HookPorts{Repo: m.Repo, Driver: m.Driver, Precheck: m.Peers.Precheck}
}
