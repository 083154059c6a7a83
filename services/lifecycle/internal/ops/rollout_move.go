package ops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/fleet"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/steps"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// move starts the targets that may move now: pending ones whose
// maintenance window is open, as many as the wave's concurrency allows
// beside those still being verified. The wave's shared resources move with
// its first targets. Targets are journaled as Moving before anything
// moves, and as Verifying (at the new version) after.
func (w *waveRun) move(ctx context.Context) error {
	inv, err := w.d.Repo.Inventory(ctx)
	if err != nil {
		return err
	}
	windows := map[string]*lifecycle.MaintenanceWindow{}
	for _, r := range inv.RegionList() {
		for _, s := range r.Supervisors {
			windows[s.Name] = s.Window
		}
	}
	limit := w.spec().MaxConcurrent
	inFlight := len(w.targetsIn(lifecycle.TargetMoving, lifecycle.TargetVerifying))
	var due []string
	for i := range w.st.Targets {
		t := &w.st.Targets[i]
		if t.Wave != w.k || (t.State != lifecycle.TargetPending && t.State != lifecycle.TargetWaitingWindow && t.State != lifecycle.TargetMoving) {
			continue
		}
		if t.State != lifecycle.TargetMoving {
			open, opens, err := fleet.Open(windows[t.Supervisor], w.now)
			if err != nil {
				t.State, t.Message = lifecycle.TargetBlocked, err.Error()
				continue
			}
			if !open {
				t.State, t.WindowOpens, t.Message = lifecycle.TargetWaitingWindow, opens, "waiting for its maintenance window (opens "+opens.Format(time.RFC3339)+")"
				continue
			}
			if limit > 0 && inFlight+len(due) >= limit {
				continue
			}
		}
		t.State, t.WindowOpens, t.Message = lifecycle.TargetMoving, time.Time{}, ""
		due = append(due, t.Supervisor)
	}
	shared := !w.state().SharedMoved
	if len(due) == 0 && (!shared || !w.hasShared()) {
		return nil
	}
	if err := saveRollout(ctx, w.d, w.r, fmt.Sprintf("wave %s: moving %d target(s)", w.name(), len(due))); err != nil {
		return err
	}
	w.d.failpoint(ctx, fmt.Sprintf("rollout/wave-%d:moving", w.k+1))
	rend, err := steps.RenderFor(ctx, w.d.Ports.Render(), w.d.Writer, w.r.cache(), w.u.next, w.u.nb)
	if err != nil {
		return err
	}
	err = steps.MoveResourcesWhere(ctx, w.d.Ports.Apply(), w.u.next, rend, w.u.to, "rollout wave "+w.name(), scopeOf(w.st, due, shared, w.k))
	if err != nil && !isResourceFailure(err) {
		return err
	}
	w.d.failpoint(ctx, fmt.Sprintf("rollout/wave-%d:moved", w.k+1))
	w.state().SharedMoved = true
	for i := range w.st.Targets {
		t := &w.st.Targets[i]
		if slices.Contains(due, t.Supervisor) {
			t.State, t.Version, t.MovedAt, t.HealthyAt = lifecycle.TargetVerifying, w.u.to, w.now, time.Time{}
		}
	}
	return saveRollout(ctx, w.d, w.r, fmt.Sprintf("wave %s: moved %d target(s)", w.name(), len(due)))
}

// hasShared reports shared resources that move with this wave.
func (w *waveRun) hasShared() bool {
	for _, k := range w.st.Shared {
		if k == w.k {
			return true
		}
	}
	return false
}

// verify reads, on their targets, the resources of the wave's targets in
// state checking: a target is Healthy when every one of its resources is
// Healthy at (or after) the generation the move applied and owned by
// version, and reaches done once it stayed so for soak; one Unhealthy
// resource, or no Healthy within the gate timeout, fails it. Statuses
// read before the move never count: only objects at the generation the
// move left, read after it.
func (w *waveRun) verify(ctx context.Context, version, checking, done string, soak time.Duration) error {
	sups := w.targetsIn(checking)
	if len(sups) == 0 {
		return nil
	}
	health, err := w.read(ctx, version, scopeOf(w.st, sups, false, w.k))
	if err != nil {
		return err
	}
	timeout := fleet.GateTimeout(&w.st.Strategy)
	for i := range w.st.Targets {
		t := &w.st.Targets[i]
		if t.Wave != w.k || t.State != checking {
			continue
		}
		h := health[t.Supervisor]
		switch {
		case h.failed != "":
			t.State, t.Message, t.HealthyAt = lifecycle.TargetFailed, h.failed, time.Time{}
		case h.pending == "":
			if t.HealthyAt.IsZero() {
				t.HealthyAt = w.now
			}
			t.Message = ""
			if w.now.Sub(t.HealthyAt) >= soak {
				t.State = done
			}
		case w.now.Sub(t.MovedAt) > timeout:
			t.State, t.Message, t.HealthyAt = lifecycle.TargetFailed, fmt.Sprintf("not Healthy at version %s within %s: %s", version, timeout, h.pending), time.Time{}
		default:
			t.Message, t.HealthyAt = h.pending, time.Time{}
		}
	}
	return nil
}

// health is how one Supervisor's resources stand: a failure, or what is
// still pending ("" and "": all Healthy).
type health struct{ failed, pending string }

// read reads the resources in scope on their targets, in parallel, and
// folds them per Supervisor; it records the statuses it read.
func (w *waveRun) read(ctx context.Context, version string, inScope func(*lifecycle.Resource) bool) (map[string]health, error) {
	all, err := w.d.Repo.Resources(ctx, w.r.op.ServiceID)
	if err != nil {
		return nil, err
	}
	var res []*lifecycle.Resource
	for _, r := range all {
		if inScope(r) {
			res = append(res, r)
		}
	}
	out := map[string]health{}
	var mu sync.Mutex
	var changed []*lifecycle.Resource
	err = steps.Parallel(ctx, w.d.Log, w.d.Ports.Concurrency, len(res), func(ctx context.Context, i int) error {
		r := res[i]
		status, msg := readHealth(ctx, w.d.Ports.Driver, r, version)
		mu.Lock()
		defer mu.Unlock()
		h := out[r.Supervisor]
		what := fmt.Sprintf("%s %s%s", r.Kind, r.Name, steps.OnSupervisor(r.Supervisor))
		switch status {
		case target.StatusUnhealthy:
			h.failed = strings.TrimSpace(h.failed + "; " + what + ": " + msg)
		case target.StatusHealthy:
		default:
			if h.pending == "" {
				h.pending = what + ": " + msg
			}
		}
		out[r.Supervisor] = h
		if r.Status != status || r.Message != msg {
			r.Status, r.Message, r.LastModified = status, msg, w.now
			changed = append(changed, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for sup, h := range out {
		h.failed = strings.TrimPrefix(h.failed, "; ")
		out[sup] = h
	}
	if len(changed) > 0 {
		if err := steps.PutResources(ctx, w.d.Ports.Records(), changed); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readHealth reads one resource on its target as a gate sees it.
func readHealth(ctx context.Context, driver target.Driver, r *lifecycle.Resource, version string) (string, string) {
	if r.Kind == "Overlay" {
		return r.Status, r.Message
	}
	obj, err := driver.Get(ctx, r.Target)
	switch {
	case err != nil:
		return target.StatusBusy, "cannot read it: " + err.Error()
	case obj.Owner.Version != version:
		return target.StatusBusy, fmt.Sprintf("owned by version %s, not %s yet", obj.Owner.Version, version)
	case obj.Generation < r.Generation:
		return target.StatusBusy, fmt.Sprintf("at generation %d, waiting for %d", obj.Generation, r.Generation)
	}
	return obj.Status, obj.Message
}

// sharedHealthy reports the wave's shared resources Healthy (those not on
// one Supervisor); it reads them when the wave moved them.
func (w *waveRun) sharedHealthy(ctx context.Context) bool {
	if !w.hasShared() {
		return true
	}
	h, err := w.read(ctx, w.u.to, func(r *lifecycle.Resource) bool { return r.Supervisor == "" && fleet.WaveOf(r, w.st) == w.k })
	if err != nil {
		return false
	}
	return h[""].failed == "" && h[""].pending == ""
}
