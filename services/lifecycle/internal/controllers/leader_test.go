package controllers

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/commit"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/storage/storagetest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

// terms hands out controller leadership one term at a time: each Lead
// returns a context the test ends with lose().
type terms struct {
	mu   sync.Mutex
	lose context.CancelFunc
	won  chan struct{}
}

func (l *terms) Lead(ctx context.Context) (context.Context, func(), error) {
	led, cancel := context.WithCancel(ctx)
	l.mu.Lock()
	l.lose = cancel
	l.mu.Unlock()
	select {
	case l.won <- struct{}{}:
		return led, cancel, nil
	case <-ctx.Done():
		cancel()
		return nil, nil, ctx.Err()
	}
}

func (l *terms) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lose()
}

// upgrades says every service has 2.0.0 to move to; starts records which
// services the controllers started an automatic upgrade of.
type upgrades struct{ starts chan string }

func (upgrades) AutoUpgradeTarget(context.Context, *lifecycle.Service) (*lifecycle.CatalogEntry, error) {
	return &lifecycle.CatalogEntry{Name: "arcturus", Version: "2.0.0", Digest: "sha256:2"}, nil
}

func (u upgrades) StartAutoUpgrade(_ context.Context, id string, _ *lifecycle.CatalogEntry) error {
	u.starts <- id
	return nil
}

type nopObserver struct{}

func (nopObserver) Reconciled(string, string, time.Duration, error) {}

type nopListener struct{}

func (nopListener) ServiceChanged(*lifecycle.Service) {}
func (nopListener) ServiceDeleted(string)             {}

// A replica that loses the controller leadership and wins it back runs its
// controllers again: each term has a working queue. (The queue used to be
// shut down with the first term and stayed shut, so a replica that had led
// once never reconciled anything again.)
func TestControllersWorkAgainAfterLeadershipComesBack(t *testing.T) {
	ctx := t.Context()
	repo := storagetest.NewRepo(t)
	svc := &lifecycle.Service{ID: lifecycle.IDPrefix + "a", Name: "arcturus", Version: "1.0.0", Digest: "sha256:1",
		LifecycleState: lifecycle.StateActive, Status: lifecycle.StatusHealthy, AutoUpgrade: true}
	require.NoError(t, repo.Update(ctx, func(tx lifecycle.Tx) error { return tx.PutService(svc) }))
	sim, err := simulator.Open(simulator.Config{Path: filepath.Join(t.TempDir(), "targets.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })

	log := slog.New(slog.DiscardHandler)
	writer := commit.New(commit.Deps{Repo: repo, Listener: nopListener{}, Now: time.Now, Log: log})
	up := upgrades{starts: make(chan string, 16)}
	lead := &terms{won: make(chan struct{})}
	c := New(Deps{
		Repo: repo, Driver: sim, Writer: writer, Queue: NewQueue(time.Hour),
		Ports:    steps.Ports{Repo: repo, Driver: sim, Store: writer, Log: log, Now: time.Now, Concurrency: 4},
		Upgrades: up, Upgrader: up, Observer: nopObserver{}, Leadership: lead,
		Interval: time.Hour, RetryBackoff: time.Millisecond, Log: log, Now: time.Now,
	})
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { <-done })

	for term := 1; term <= 3; term++ {
		<-lead.won
		drain(up.starts)
		c.d.Queue.Add(svc.ID)
		select {
		case id := <-up.starts:
			require.Equal(t, svc.ID, id, "term %d", term)
		case <-time.After(10 * time.Second):
			require.FailNow(t, "no controller pass in this term", "term %d", term)
		}
		lead.end()
	}
}

// drain empties ch of what an earlier term sent.
func drain(ch chan string) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
