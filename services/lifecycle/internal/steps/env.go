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
