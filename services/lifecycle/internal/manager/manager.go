// Package manager is the lifecycle wing's front door: Manager has exactly
// the methods the gRPC server (and the binary) call, each handed to the
// room that owns it, and New builds the rooms once, each with its own
// dependencies:
//
//	commit       the one write path (transactions, the journal's writes, revision checks)
//	ops          the operations as step tables, their engine host, the requests that start them
//	controllers  reconcile, automatic upgrade, the targets' change detection, leadership
//	reads        queries, lists and their memo, the watch hub, previews (render, plan, checks)
//
// Nothing is embedded: a room's own methods are not the server's.
package manager

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/commit"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/controllers"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/ops"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/reads"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/refetch"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Config tunes the manager.
type Config struct {
	// ReconcileInterval is how often controllers re-check every active
	// service's resources (they also run on every change).
	ReconcileInterval time.Duration
	// StepTimeout bounds one operation step (download, render, apply…);
	// a step that exceeds it marks the operation Stuck.
	StepTimeout time.Duration
	// StepTimeouts overrides StepTimeout per step name.
	StepTimeouts map[string]time.Duration
	// RetryBackoff is the first wait before retrying a step that failed
	// for a transient reason (a peer or target unavailable); it doubles up
	// to 30 s.
	RetryBackoff time.Duration
	// Workers is how many operations (of different services) run at once.
	Workers int
	// TargetConcurrency bounds parallel calls to the targets.
	TargetConcurrency int
	// RefreshInterval, when set, reloads the repository's in-memory view
	// that often: replicas sharing one etcd see each other's writes.
	RefreshInterval time.Duration
	// Claims, when set (several replicas on one etcd), runs each
	// service's operations on one replica at a time; ClaimSweep is how
	// often a replica looks for operations whose owner died.
	Claims     engine.Claims
	ClaimSweep time.Duration
	// Leadership, when set, runs the controllers only on the elected
	// replica.
	Leadership controllers.Leadership
	// Now returns the current time; tests pin it.
	Now    func() time.Time
	Logger *slog.Logger
	// VerifySignatures, when set, must accept a bundle's signatures before
	// an activation that accepted them (trusted keys are configured).
	VerifySignatures func(*bundle.Bundle) error
	// SignatureSet names a bundle's signature set: what an upgrade's
	// acceptance compares (steps.Terms).
	SignatureSet func(*bundle.Bundle) []string
	// Observer receives metrics and trace events; nil: none.
	Observer Observer
	// RolloutPoll is how often a running rollout looks at its targets
	// (0: every second).
	RolloutPoll time.Duration
}

func (c *Config) defaults() {
	if c.ReconcileInterval <= 0 {
		c.ReconcileInterval = 2 * time.Second
	}
	if c.StepTimeout <= 0 {
		c.StepTimeout = 10 * time.Minute
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = 200 * time.Millisecond
	}
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.TargetConcurrency <= 0 {
		c.TargetConcurrency = 32
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
}

// stepTimeout bounds one step: its own bound or the common one.
func (c *Config) stepTimeout(name string) time.Duration {
	if d, ok := c.StepTimeouts[name]; ok && d > 0 {
		return d
	}
	return c.StepTimeout
}

// Manager is the lifecycle service's facade.
type Manager struct {
	writer     *commit.Writer
	runner     *ops.Runner
	controller *controllers.Controller
	reader     *reads.Reader
	previews   *reads.Previews

	mu      sync.Mutex
	started bool
}

// NewManager builds the rooms of the wing and the facade over them; Start
// runs the background work.
func NewManager(cfg Config, repo lifecycle.Repository, bundles lifecycle.Bundles, peers lifecycle.Peers, driver target.Driver) *Manager {
	cfg.defaults()
	now := func() time.Time { return cfg.Now().UTC() }
	if bundles != nil {
		bundles = refetch.New(bundles, repo, cfg.Logger)
	}
	hub := reads.NewHub()
	queue := controllers.NewQueue(cfg.ReconcileInterval)
	writer := commit.New(commit.Deps{Repo: repo, Listener: announcer{hub: hub, queue: queue, now: now}, Now: now, Log: cfg.Logger})
	ports := steps.Ports{Repo: repo, Peers: peers, Driver: driver, Store: writer, Log: cfg.Logger, Now: now, Concurrency: cfg.TargetConcurrency,
		Signers: cfg.SignatureSet, VerifySignatures: cfg.VerifySignatures}
	reader := reads.New(reads.Deps{Repo: repo, Bundles: bundles, Hub: hub, Now: now})
	runner := ops.New(ops.Deps{
		Repo: repo, Bundles: bundles, Ports: ports, Writer: writer, Kick: queue.Add,
		Observer: cfg.Observer, Log: cfg.Logger, Now: now, RolloutPoll: cfg.RolloutPoll,
	}, ops.Engine{
		Workers: cfg.Workers, StepTimeout: cfg.stepTimeout, RetryBackoff: cfg.RetryBackoff,
		SweepEvery: 5 * cfg.ReconcileInterval, Claims: cfg.Claims, ClaimSweep: cfg.ClaimSweep,
	})
	previews := reads.NewPreviews(reader, ports, bundles)
	controller := controllers.New(controllers.Deps{
		Repo: repo, Driver: driver, Ports: ports, Writer: writer, Queue: queue,
		Upgrades: previews, Upgrader: runner, Observer: cfg.Observer, Leadership: cfg.Leadership,
		Interval: cfg.ReconcileInterval, RefreshInterval: cfg.RefreshInterval, RetryBackoff: cfg.RetryBackoff,
		Log: cfg.Logger, Now: now,
	})
	return &Manager{writer: writer, runner: runner, controller: controller, reader: reader,
		previews: previews}
}

// announcer hands every committed change to the watch streams and the
// controllers' queue.
type announcer struct {
	hub   *reads.Hub
	queue *controllers.Queue
	now   func() time.Time
}

func (a announcer) ServiceChanged(svc *lifecycle.Service) {
	a.hub.Publish(reads.EventOf(svc, false, a.now()))
	a.queue.Kick(svc.ID)
}

func (a announcer) ServiceDeleted(id string) {
	a.hub.Publish(reads.Event{ID: id, Deleted: true, Time: a.now()})
}

// Start resumes unfinished operations and runs the operation workers and
// the controllers until ctx ends. It returns once they are running; wait
// for them with the returned function.
func (m *Manager) Start(ctx context.Context) (wait func(), err error) {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return nil, fmt.Errorf("manager already started")
	}
	m.started = true
	m.mu.Unlock()

	var wg sync.WaitGroup
	m.writer.Follow(ctx, &wg)
	if err := m.runner.Start(ctx, &wg); err != nil {
		return nil, err
	}
	wg.Go(func() { m.controller.Run(ctx) })
	m.controller.WatchTargets(ctx)
	return wg.Wait, nil
}

// QueueDepth is the number of operations waiting for a worker.
func (m *Manager) QueueDepth() int { return m.runner.QueueDepth() }
