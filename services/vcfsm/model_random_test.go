package vcfsm_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

var (
	modelSeed   = flag.Uint64("seed", 0, "TestModelRandom's seed (0: a new one, printed)")
	modelSteps  = flag.Int("steps", 200, "TestModelRandom's number of steps")
	modelBudget = flag.Duration("model-budget", 100*time.Second, "TestModelRandom stops starting steps after this long (0: no limit)")
)

// expected is what the model says one service looks like.
type expected struct {
	exists   bool
	state    string
	statuses []string
	version  string
	// upgraded is true once the service was upgraded: it has a version to
	// roll back to.
	upgraded bool
	accepted bool
	labels   string
}

// resources is how many target resources the service owns in this state.
func (e expected) resources() int {
	if !e.exists || e.state == "inactive" {
		return 0
	}
	if e.version == "2.0.0" {
		return 5
	}
	return 3
}

// randomAction is one kind of step: when it applies to the model, the
// request it sends and what the model expects after it.
type randomAction struct {
	name string
	// when says whether the action is worth taking in e.
	when func(e expected) bool
	do   func(r *randomRun, e expected) (reply, error)
	// code is the answer the model expects; next the state after it.
	code int
	next func(r *randomRun, e expected) expected
}

// rareActions are picked a third as often as the others.
var rareActions = map[string]bool{"create again": true, "delete": true, "force delete": true}

func statuses(s ...string) []string { return s }

func same(_ *randomRun, e expected) expected { return e }

func gone(*randomRun, expected) expected { return expected{} }

var randomActions = []randomAction{
	{"create", func(e expected) bool { return !e.exists },
		func(r *randomRun, _ expected) (reply, error) { return r.create() }, http.StatusOK,
		func(*randomRun, expected) expected {
			return expected{exists: true, state: "inactive", statuses: statuses("Unresolved"), version: "1.0.0"}
		}},
	{"create again", func(e expected) bool { return e.exists },
		func(r *randomRun, _ expected) (reply, error) {
			return call(r.c.box, http.MethodPost, "/v2/vcf-services", map[string]any{"source": r.s.v1})
		}, http.StatusConflict, same},
	{"accept", func(e expected) bool { return e.exists && e.state == "inactive" },
		func(r *randomRun, _ expected) (reply, error) { return r.patch(`{` + r.acceptance() + `}`) }, http.StatusAccepted,
		func(_ *randomRun, e expected) expected { e.accepted, e.statuses = true, statuses("Ready"); return e }},
	{"activate", func(e expected) bool { return e.exists && e.state != "active" },
		func(r *randomRun, _ expected) (reply, error) {
			return r.patch(`{"lifecycleState":"active",` + r.acceptance() + `}`)
		}, http.StatusAccepted,
		func(_ *randomRun, e expected) expected {
			e.accepted, e.state, e.statuses = true, "active", statuses("Healthy")
			return e
		}},
	// paused → inactive is refused (seed 002: from paused only active, or
	// DELETE); deactivation is an active service's.
	{"deactivate", func(e expected) bool { return e.exists && e.state == "active" },
		func(r *randomRun, _ expected) (reply, error) { return r.patch(`{"lifecycleState":"inactive"}`) }, http.StatusAccepted,
		func(_ *randomRun, e expected) expected { e.state, e.statuses = "inactive", statuses("Ready"); return e }},
	{"pause", func(e expected) bool { return e.exists && e.state == "active" },
		func(r *randomRun, _ expected) (reply, error) { return r.patch(`{"lifecycleState":"paused"}`) }, http.StatusAccepted,
		func(_ *randomRun, e expected) expected { e.state = "paused"; return e }},
	{"upgrade", func(e expected) bool { return e.exists && e.version == "1.0.0" && e.state == "active" },
		func(r *randomRun, _ expected) (reply, error) { return r.patch(`{"source":"` + r.s.v2 + `"}`) }, http.StatusAccepted,
		func(_ *randomRun, e expected) expected { e.version, e.upgraded = "2.0.0", true; return e }},
	{"upgrade while inactive", func(e expected) bool { return e.exists && e.version == "1.0.0" && e.state == "inactive" },
		func(r *randomRun, _ expected) (reply, error) { return r.patch(`{"source":"` + r.s.v2 + `"}`) }, http.StatusAccepted,
		func(_ *randomRun, e expected) expected {
			// Like a fresh registration: nothing applied, activation needs
			// the new version's acceptance, and there is no earlier live
			// version to roll back to.
			e.version, e.upgraded, e.accepted = "2.0.0", false, false
			e.statuses = statuses("Unresolved", "Ready")
			return e
		}},
	{"upgrade while paused", func(e expected) bool { return e.exists && e.version == "1.0.0" && e.state == "paused" },
		func(r *randomRun, _ expected) (reply, error) { return r.patch(`{"source":"` + r.s.v2 + `"}`) }, http.StatusConflict,
		same},
	// A rollback needs a version an upgrade replaced: not after an
	// inactive service's version change (nothing was live before it).
	{"rollback", func(e expected) bool { return e.exists && e.version == "2.0.0" && e.upgraded && e.state == "active" },
		func(r *randomRun, _ expected) (reply, error) {
			return call(r.c.box, http.MethodPost, "/v2/vcf-services/"+r.s.id+"/rollback", map[string]any{})
		}, http.StatusAccepted,
		func(_ *randomRun, e expected) expected { e.version = "1.0.0"; return e }},
	{"labels", func(e expected) bool { return e.exists },
		func(r *randomRun, _ expected) (reply, error) {
			r.label++
			return r.patch(fmt.Sprintf(`{"labels":{"step":"%d"}}`, r.label))
		}, http.StatusAccepted,
		func(r *randomRun, e expected) expected { e.labels = fmt.Sprint(r.label); return e }},
	{"values", func(e expected) bool { return e.exists },
		func(r *randomRun, _ expected) (reply, error) {
			return r.patch(`{"values":{"userOverwrite":"` + overwrite + `"}}`)
		}, http.StatusAccepted, same},
	{"delete", func(e expected) bool { return e.exists },
		func(r *randomRun, _ expected) (reply, error) {
			return call(r.c.box, http.MethodDelete, "/v2/vcf-services/"+r.s.id, nil)
		}, http.StatusAccepted, gone},
	{"force delete", func(e expected) bool { return e.exists },
		func(r *randomRun, _ expected) (reply, error) {
			return call(r.c.box, http.MethodDelete, "/v2/vcf-services/"+r.s.id+"?forceDelete=true", nil)
		}, http.StatusAccepted, gone},
}

// randomRun is the random test's world: the lifecycle binary as a child
// process (so it can be SIGKILLed), one service of the model's bundle.
type randomRun struct {
	c     *crashWorld
	s     *modelService
	label int
	want  expected
}

func (r *randomRun) patch(body string) (reply, error) {
	return call(r.c.box, http.MethodPatch, "/v2/vcf-services/"+r.s.id, body)
}

func (r *randomRun) acceptance() string {
	m := &modelRun{w: r.c.world, s: r.s}
	return m.acceptance()
}

func (r *randomRun) create() (reply, error) {
	m := &modelRun{w: r.c.world, s: r.s}
	err := m.create(r.s.v1)
	return reply{Status: http.StatusOK}, err
}

// TestModelRandom applies random actions to a service, SIGKILLing the
// lifecycle process now and then (right after an action was accepted, so
// its operation is cut short) and restarting it on the same data; after
// every step every observable of the service is checked against the
// model, and after every crash what it owns on the targets. Replay a seed
// with `go test -run TestModelRandom -seed N .`.
func TestModelRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts the lifecycle binary; run without -short")
	}
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d; replay with: cd services/vcfsm && go test -count=1 -run TestModelRandom -seed %d .", seed, seed)
	defer func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d; replay with: cd services/vcfsm && go test -count=1 -run TestModelRandom -seed %d -steps %d .", seed, seed, *modelSteps)
		}
	}()
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	r := &randomRun{c: newCrashWorld(t, buildLifecycle(t), startPeers(t), "")}
	r.s = newModelService(t, r.c.world, true)
	start, ran := time.Now(), 0
	for step := 0; step < *modelSteps; step++ {
		if *modelBudget > 0 && time.Since(start) > *modelBudget {
			break
		}
		r.step(t, rng, step)
		ran++
	}
	t.Logf("seed %d: %d steps ran clean in %s", seed, ran, time.Since(start).Round(time.Second))
}

// allowedActions are the actions MODEL_ACTIONS names (all when unset).
func allowedActions() []randomAction {
	sel := os.Getenv("MODEL_ACTIONS")
	if sel == "" {
		return randomActions
	}
	var out []randomAction
	for _, a := range randomActions {
		if slices.Contains(strings.Split(sel, ","), a.name) {
			out = append(out, a)
		}
	}
	return out
}

func (r *randomRun) step(t *testing.T, rng *rand.Rand, n int) {
	var choices []randomAction
	for _, a := range allowedActions() {
		if !a.when(r.want) {
			continue
		}
		choices = append(choices, a)
		if !rareActions[a.name] {
			choices = append(choices, a, a)
		}
	}
	if len(choices) == 0 {
		t.Fatalf("step %d: no action applies to %+v", n, r.want)
	}
	a := choices[rng.IntN(len(choices))]
	crash := rng.IntN(5) == 0
	t.Logf("step %d: %s%s (model: %+v)", n, a.name, map[bool]string{true: ", then SIGKILL"}[crash], r.want)
	answer, err := a.do(r, r.want)
	require.NoError(t, err, "step %d: %s", n, a.name)
	require.Equal(t, a.code, answer.Status, "step %d: %s: %s", n, a.name, answer)
	r.want = a.next(r, r.want)
	if crash {
		r.c.kill(t)
		r.checkTargets(t, n, false)
		r.c.restart(t, "")
	}
	r.check(t, n)
	if rng.IntN(8) == 0 {
		// A crash of a settled process: what it owns on the targets is
		// exactly what the model says, and nothing moves after the restart.
		t.Logf("step %d: SIGKILL while settled", n)
		r.c.kill(t)
		r.checkTargets(t, n, true)
		r.c.restart(t, "")
		r.check(t, n)
	}
}

// check waits (with a deadline) until the service looks as the model
// says: gone, or its state, status, version, labels and resources.
func (r *randomRun) check(t *testing.T, n int) {
	var last svcView
	var gone bool
	err := until(90*time.Second, func() (bool, error) {
		resp, err := call(r.c.box, http.MethodGet, "/v2/vcf-services/"+r.s.id+"?state=true", nil)
		if err != nil {
			return false, err
		}
		gone = resp.Status == http.StatusNotFound
		if !r.want.exists {
			return gone, nil
		}
		last = svcView{}
		if resp.Status != http.StatusOK {
			return false, fmt.Errorf("GET: %s", resp)
		}
		if err := json.Unmarshal(resp.Body, &last); err != nil {
			return false, err
		}
		return r.matches(last), nil
	})
	require.NoError(t, err, "step %d: want %+v; got gone=%v state %s status %s version %s phase %q labels %v, %d resources",
		n, r.want, gone, last.LifecycleState, last.Status, last.Version, last.Phase, last.Labels, resourcesOf(last))
}

func (r *randomRun) matches(v svcView) bool {
	e := r.want
	labelsOK := v.Labels["step"] == e.labels
	return v.LifecycleState == e.state && slices.Contains(e.statuses, v.Status) && v.Version == e.version &&
		labelsOK && resourcesOf(v) == e.resources()
}

func resourcesOf(v svcView) int {
	if v.State == nil {
		return 0
	}
	return len(v.State.Resources)
}

// checkTargets opens the simulated targets while the process is down: every
// resource the service owns carries its finalizer and, when the process
// was settled, they are exactly what the model says (an operation cut
// short by a crash may be half done).
func (r *randomRun) checkTargets(t *testing.T, n int, settled bool) {
	sim, err := simulator.Open(simulator.Config{Path: filepath.Join(r.c.dataDir, "simulated-targets.db")})
	require.NoError(t, err)
	defer func() { _ = sim.Close() }()
	objs, err := sim.List(context.Background(), r.s.id)
	require.NoError(t, err)
	for _, o := range objs {
		require.Equal(t, []string{"services.vcfa.broadcom.com/cleanup"}, o.Finalizers, "step %d: %s", n, o.Key)
	}
	if !settled {
		return
	}
	require.Len(t, objs, r.want.resources(), "step %d: the service's target resources (model %+v)", n, r.want)
	for _, o := range objs {
		require.Equal(t, r.want.version, o.Owner.Version, "step %d: %s", n, o.Key)
	}
}
