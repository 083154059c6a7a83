package manager

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/workqueue"
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
	// replica (see leader.go).
	Leadership Leadership
	// Now returns the current time; tests pin it.
	Now    func() time.Time
	Logger *slog.Logger
	// VerifySignatures, when set, must accept a bundle's signatures before
	// an activation that accepted them (trusted keys are configured).
	VerifySignatures func(*bundle.Bundle) error
	// Observer receives metrics and trace events; nil: none.
	Observer Observer
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

// Manager is the lifecycle service's facade: one method per RPC, plus
// Start and ReconcileAll for the binary and the controllers. What the
// operations and controllers share (the ports, the store helpers, the
// engine) is core; the operations are in op_*.go, their steps in
// internal/steps.
type Manager struct {
	*core
}

// core holds the machinery the operations and controllers use. It embeds
// the ports (from which it builds each step's ports) and is the steps'
// Writer, so a step's commit reaches watchers and the controllers' queue
// like any other.
type core struct {
	cfg Config
	ports

	hub     *hub
	feeding feeding
	engine  *engine.Engine[*run]
	// queue holds the services due for a controller pass (controller.go).
	queue *workqueue.Queue[string]
	// feed: the driver reports changes on its targets (target.ChangeFeed).
	feed bool

	mu sync.Mutex
	// lastSweep spaces the orphan sweeps per service.
	lastSweep map[string]time.Time
	// reconciling are the services a controller pass is working on.
	reconciling map[string]bool
	started     bool

	// upgrades: each installed version's available upgrade, per catalog
	// generation.
	upgrades upgradeMemo
	// lists: each filter's matches in the current services snapshot.
	lists listMemo
}

// NewManager builds a manager; Start runs its background work.
func NewManager(cfg Config, repo lifecycle.Repository, bundles lifecycle.Bundles, peers lifecycle.Peers, driver target.Driver) *Manager {
	cfg.defaults()
	if bundles != nil {
		bundles = newRefetching(bundles, repo, cfg.Logger)
	}
	m := &core{
		cfg:         cfg,
		hub:         newHub(),
		queue:       workqueue.New[string](cfg.ReconcileInterval, healthyRecheck*cfg.ReconcileInterval),
		reconciling: map[string]bool{},
	}
	m.ports = ports{
		Repo: repo, Bundles: bundles, Peers: peers, Driver: driver, Store: m, Log: cfg.Logger,
		Now: m.now, TargetConcurrency: cfg.TargetConcurrency,
	}
	_, m.feed = driver.(target.ChangeFeed)
	m.engine = engine.New(engine.Config{
		Workers:      cfg.Workers,
		QueueSize:    4096,
		SweepEvery:   5 * cfg.ReconcileInterval,
		StepTimeout:  cfg.stepTimeout,
		RetryBackoff: cfg.RetryBackoff,
		MaxBackoff:   30 * time.Second,
		Retryable:    retryable,
		// VCFSM_FAILPOINTS is unset in production; the crash tests set it.
		Failpoints: engine.ParseFailpoints(os.Getenv("VCFSM_FAILPOINTS")),
		Claims:     cfg.Claims,
		ClaimSweep: cfg.ClaimSweep,
		Now:        m.now,
		Logger:     cfg.Logger,
		Observer:   cfg.Observer,
	}, journal{m})
	return &Manager{core: m}
}

// stepTimeout bounds one step: its own bound or the common one.
func (c *Config) stepTimeout(name string) time.Duration {
	if d, ok := c.StepTimeouts[name]; ok && d > 0 {
		return d
	}
	return c.StepTimeout
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
	m.followStore(ctx, &wg)
	m.countResumed(ctx)
	if err := m.engine.Start(ctx, &wg); err != nil {
		return nil, err
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		m.runControllers(ctx)
	}()
	if w, ok := m.Driver.(target.Watcher); ok {
		m.watchTargets(ctx, w)
	}
	return wg.Wait, nil
}

func (m *core) now() time.Time { return m.cfg.Now().UTC() }

func newServiceID() string { return lifecycle.IDPrefix + uuid.NewString() }

// newOperationID sorts by creation time.
func (m *core) newOperationID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%016x-%s", m.now().UnixNano(), hex.EncodeToString(b[:]))
}

// Namespace is a service's per-Supervisor namespace: svc-<refName, dots as
// dashes>.
func Namespace(refName string) string {
	return "svc-" + strings.ReplaceAll(strings.ToLower(refName), ".", "-")
}

// Update runs fn in a transaction and announces every service it wrote to
// watchers once committed.
func (m *core) Update(ctx context.Context, fn func(lifecycle.Tx) error) error {
	var rec *recordingTx
	err := m.Repo.Update(ctx, func(tx lifecycle.Tx) error {
		rec = &recordingTx{Tx: tx}
		return fn(rec)
	})
	if err != nil {
		return err
	}
	if m.feeding.on.Load() {
		return nil // the store's feed publishes every commit, this one too
	}
	for _, s := range rec.put {
		m.hub.publish(eventOf(s, false, m.now()))
		m.queueReconcile(s.ID)
	}
	for _, id := range rec.deleted {
		m.hub.publish(Event{ID: id, Deleted: true, Time: m.now()})
	}
	return nil
}

type recordingTx struct {
	lifecycle.Tx
	put     []*lifecycle.Service
	deleted []string
}

func (r *recordingTx) PutService(s *lifecycle.Service) error {
	if err := r.Tx.PutService(s); err != nil {
		return err
	}
	r.put = append(r.put, s.Clone())
	return nil
}

func (r *recordingTx) DeleteService(id string) error {
	if err := r.Tx.DeleteService(id); err != nil {
		return err
	}
	r.deleted = append(r.deleted, id)
	return nil
}

// Mutate applies fn to a fresh copy of the service and writes it back,
// retrying when a concurrent writer won (fn must be repeatable).
func (m *core) Mutate(ctx context.Context, id string, fn func(tx lifecycle.Tx, svc *lifecycle.Service) error) (*lifecycle.Service, error) {
	var out *lifecycle.Service
	err := m.Update(ctx, func(tx lifecycle.Tx) error {
		svc, err := tx.Service(id)
		if err != nil {
			return err
		}
		if err := fn(tx, svc); err != nil {
			return err
		}
		for _, op := range svc.PendingHistory {
			if err := tx.PutOperation(op); err != nil {
				return err
			}
		}
		svc.PendingHistory = nil
		svc.UpdatedAt = m.now()
		if err := tx.PutService(svc); err != nil {
			return err
		}
		out = svc
		return nil
	})
	return out, err
}

// countResumed tells the observer of the unfinished operations found at
// start. It is not done where the engine lists unfinished operations: the
// takeover sweep lists them again and again.
func (m *core) countResumed(ctx context.Context) {
	ops, err := m.Repo.UnfinishedOperations(ctx)
	if err != nil {
		return // the engine's own listing reports the error
	}
	for _, op := range ops {
		if op.Outcome != lifecycle.OutcomeStuck {
			m.Log.Info("resuming operation", "service", op.ServiceID, "operation", op.ID, "type", op.Type)
			m.cfg.Observer.OperationResumed(op.Type)
		}
	}
}
