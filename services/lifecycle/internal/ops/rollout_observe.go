package ops

import (
	"context"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/engine"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Wave directions and outcomes, as a RolloutObserver is told them.
const (
	WaveForward  = "forward"
	WaveRollback = "rollback"

	WaveDone       = "Done"
	WaveFailed     = "Failed"
	WaveAborted    = "Aborted"
	WaveRolledBack = "RolledBack"
)

// RolloutObserver is what an Observer may also implement to see rollouts
// (internal/telemetry does): their waves, their targets and their
// rollbacks. It runs inline, so it must be fast and safe for concurrent
// use, and keep nothing of st past the call (the worker changes it).
type RolloutObserver interface {
	// RolloutSaved: the rollout of the operation key (an engine key) was
	// journaled as st; a Succeeded or RolledBack st is its last.
	RolloutSaved(key string, st *lifecycle.RolloutState)
	// WaveStarted: a wave began (direction WaveForward), or the rollback
	// of one began moving its targets back (WaveRollback).
	WaveStarted(direction string)
	// WaveEnded: wave k of st ended in direction with outcome; ctx is the
	// step run that ended it. Its start is journaled on st.Waves[k].
	WaveEnded(ctx context.Context, st *lifecycle.RolloutState, k int, direction, outcome string)
	// RolledBack: a rollout's rollback ended, d after it began.
	RolledBack(d time.Duration)
}

type nopRolloutObserver struct{}

func (nopRolloutObserver) RolloutSaved(string, *lifecycle.RolloutState) {}
func (nopRolloutObserver) WaveStarted(string)                           {}
func (nopRolloutObserver) WaveEnded(context.Context, *lifecycle.RolloutState, int, string, string) {
}
func (nopRolloutObserver) RolledBack(time.Duration) {}

// rollouts is the Observer's RolloutObserver, or one that sees nothing.
func (d *Deps) rollouts() RolloutObserver {
	if o, ok := d.Observer.(RolloutObserver); ok {
		return o
	}
	return nopRolloutObserver{}
}

// rolloutKey is the rollout's operation as the engine names it.
func rolloutKey(op *lifecycle.Operation) string {
	return engine.Key{Service: op.ServiceID, Operation: op.ID}.String()
}
