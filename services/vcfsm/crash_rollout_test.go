package vcfsm_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

// threeSupervisors is the fixture's inventory with a third region, so a
// rollout has three waves of one Supervisor each.
var threeSupervisors = inventoryYAML + `  - name: ap-south-1
    storageClasses: [gold]
    supervisors:
      - name: supervisor-ap1
        id: domain-c30
        version: 9.1.0.0
        kubernetesVersion: v1.31.1+vmware.2
        defaultStorageClass: gold
        vcenterName: vcenter3.example.com
`

// threeWaves: the canary, then eu1, then the rest (ap1).
const threeWaves = `{"waves":[{"name":"canary","supervisors":["supervisor-vc1"]},{"name":"eu1","supervisors":["supervisor-eu1"]},{"name":"rest","rest":true}]}`

// rolloutCrash is one rollout the crash test kills at each of its points.
type rolloutCrash struct {
	name string
	// seed is the simulator's (faults).
	seed string
	// points are the failpoints the rollout passes, in order.
	points []string
	// version, state: where it ends.
	version, state string
	// moves: how many times the simulator saw each object handed to each
	// version (its install included) or removed.
	moves map[string]map[string]int
}

// rolloutPoints are the failpoints of steps, in the order a rollout
// passes them: before each step, between a wave's (or a rollback wave's)
// journal writes — targets journaled as moving, moved on their targets,
// verified — and after it.
func rolloutPoints(steps ...string) []string {
	var out []string
	for _, s := range steps {
		out = append(out, "rollout/"+s+":before")
		if strings.Contains(s, "wave-") {
			out = append(out, "rollout/"+s+":moving", "rollout/"+s+":moved", "rollout/"+s+":verified")
		}
		out = append(out, "rollout/"+s+":after")
	}
	return out
}

// ss is the key of the SupervisorService on supervisor-<name>.
func ss(name string) string {
	return "supervisor/supervisor-" + name + "/SupervisorService/arcturus-registry.example.com"
}

var rolloutCrashes = []rolloutCrash{
	{
		name:    "rollout",
		points:  rolloutPoints("download", "configuration", "plan", "maintenance", "wave-1", "wave-2", "wave-3", "promote"),
		version: "2.0.0", state: "Succeeded",
		moves: map[string]map[string]int{
			ss("vc1"): {"1.0.0": 1, "2.0.0": 1}, ss("eu1"): {"1.0.0": 1, "2.0.0": 1}, ss("ap1"): {"1.0.0": 1, "2.0.0": 1},
			"vcfa//GlobalRole/Arcturus Administrator": {"1.0.0": 1, "2.0.0": 1},
			// 2.0.0 adds the rights bundle and drops the plugin and the
			// service account.
			"vcfa//RightBundle/arcturusRightsBundle":            {"2.0.0": 1},
			"vcfa//UserInterfacePlugin/<registry>/arcturus-ui":  {"1.0.0": 1, simulator.Removed: 1},
			"vcfa//VcfaServiceAccount/arcturus-service-account": {"1.0.0": 1, simulator.Removed: 1},
		},
	},
	{
		// eu1's SupervisorService at 2.0.0 is Unhealthy (at every apply,
		// across restarts): wave 2 fails and both waves roll back.
		name:    "rollback",
		seed:    "faults: [{scope: supervisor-eu1, kind: SupervisorService, op: apply, version: 2.0.0, effect: unhealthy, message: crash-looping}]\n",
		points:  rolloutPoints("wave-1", "wave-2", "rollback-wave-2", "rollback-wave-1", "rolled-back"),
		version: "1.0.0", state: "RolledBack",
		moves: map[string]map[string]int{
			ss("vc1"): {"1.0.0": 2, "2.0.0": 1}, ss("eu1"): {"1.0.0": 2, "2.0.0": 1}, ss("ap1"): {"1.0.0": 1},
			"vcfa//GlobalRole/Arcturus Administrator":           {"1.0.0": 2, "2.0.0": 1},
			"vcfa//RightBundle/arcturusRightsBundle":            {"2.0.0": 1, simulator.Removed: 1},
			"vcfa//UserInterfacePlugin/<registry>/arcturus-ui":  {"1.0.0": 2, simulator.Removed: 1},
			"vcfa//VcfaServiceAccount/arcturus-service-account": {"1.0.0": 2, simulator.Removed: 1},
		},
	},
}

// The durability goal for rollouts: the real lifecycle binary is
// SIGKILLed at the points of a 3-wave rollout — each step's start and end,
// each wave's moves and verification — and of one whose second wave fails
// and rolls back (each rollback wave too), restarted on the same data each
// time; the rollout ends as the same rollout with no crash ends (service,
// rollout, every target, the steps of the history, the records and the
// objects), and the simulator's own count shows each target moved exactly
// once each way.
//
// One rollout is killed at every point in turn (each restart sets the
// next one): about 25 kills each, half a minute on two busy cores.
// VCFSM_CRASH_POINTS chooses points (comma-separated);
// VCFSM_CRASH_SAMPLE=N kills at a seeded sample of N (the seed is printed,
// VCFSM_CRASH_SEED replays it).
func TestCrashRolloutAtEveryStep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts the lifecycle binary many times; run without -short")
	}
	chosen := os.Getenv("VCFSM_CRASH_POINTS")
	n, _ := strconv.Atoi(os.Getenv("VCFSM_CRASH_SAMPLE"))
	seed := time.Now().UnixNano()
	if s := os.Getenv("VCFSM_CRASH_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "VCFSM_CRASH_SEED")
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 26))
	if n > 0 {
		t.Logf("crash points: a sample of %d, seed %d (replay with VCFSM_CRASH_SEED=%d)", n, seed, seed)
	}
	bin := buildLifecycle(t)
	peers := startPeers(t)
	for _, sc := range rolloutCrashes {
		points := sc.points
		if chosen != "" {
			points = slices.DeleteFunc(slices.Clone(points), func(p string) bool { return !slices.Contains(strings.Split(chosen, ","), p) })
		}
		if n > 0 {
			points = sample(rng, points, n)
		}
		t.Run(sc.name, func(t *testing.T) {
			t.Logf("killing at %s", strings.Join(points, ", "))
			calm := runRolloutCrash(t, bin, peers, sc, nil)
			require.Equal(t, sc.moves, calm.Moves, "with no crash, each target moved once each way")
			killed := runRolloutCrash(t, bin, peers, sc, points)
			require.Equal(t, calm, killed, "killed at %v, the rollout ends as it does with no crash", points)
		})
	}
}

// sample picks n of points, kept in order.
func sample(rng *rand.Rand, points []string, n int) []string {
	idx := rng.Perm(len(points))[:min(n, len(points))]
	sort.Ints(idx)
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = points[j]
	}
	return out
}

// localAddr is the test registry's address in an identity.
var localAddr = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)

// rolloutEnd is how a rollout left the service, its records and its
// targets (the service's id written <id>).
type rolloutEnd struct {
	Version, Status, Rollout string
	Targets                  map[string]string
	Steps                    []string
	Records, Objects         map[string]string
	Moves                    map[string]map[string]int
}

// runRolloutCrash installs 1.0.0 on three Supervisors and rolls 2.0.0 out
// in three waves, killing the lifecycle binary at each of points in turn.
func runRolloutCrash(t *testing.T, bin string, peers peerServices, sc rolloutCrash, points []string) rolloutEnd {
	c := newCrashWorldOn(t, bin, peers, threeSupervisors, sc.seed, "--rollout-poll", "50ms")
	t.Cleanup(func() {
		if t.Failed() {
			c.mu.Lock()
			defer c.mu.Unlock()
			t.Logf("the lifecycle binary's last logs:\n%s", strings.Join(c.logs[max(0, len(c.logs)-40):], "\n"))
		}
	})
	id := c.installed(t, c.v1)
	next := ""
	if len(points) > 0 {
		next = points[0]
		c.restart(t, next)
	}
	patch(t, c.world, id, `{"source":"`+c.v2+`"`+acceptV2+`,"rollout":{"strategy":`+threeWaves+`}}`, http.StatusAccepted)
	for i := range points {
		c.waitFailpoint(t)
		c.kill(t)
		next = ""
		if i+1 < len(points) {
			next = points[i+1]
		}
		c.restart(t, next)
	}
	poll(t, "the rollout to end "+sc.state, 90*time.Second, func() string {
		v := c.get(t, id)
		return v.Version + " " + v.Status + " " + c.rollout(t, id).State
	}, func(s string) bool { return s == sc.version+" Healthy "+sc.state })
	return c.rolloutEnd(t, id, sc.version)
}

// rolloutEnd reads how the rollout ended, then stops the binary and reads
// the simulator's file.
func (c *crashWorld) rolloutEnd(t *testing.T, id, version string) rolloutEnd {
	anon := func(s string) string {
		return localAddr.ReplaceAllString(strings.ReplaceAll(s, id, "<id>"), "<registry>")
	}
	v := c.get(t, id)
	r := c.rollout(t, id)
	end := rolloutEnd{Version: v.Version, Status: v.Status, Rollout: r.State,
		Targets: map[string]string{}, Records: map[string]string{}, Objects: map[string]string{}, Moves: map[string]map[string]int{}}
	for _, tg := range r.Targets {
		end.Targets[tg.Supervisor] = fmt.Sprintf("wave %d: %s %s", tg.Wave, tg.Version, tg.State)
	}
	for _, op := range c.history(t, id).Operations {
		if op.Type == "rollout" {
			end.Steps = append(end.Steps, op.Outcome)
			for _, s := range op.Steps {
				end.Steps = append(end.Steps, s.Name+":"+s.Status)
			}
		}
	}
	for _, res := range v.State.Resources {
		key := anon(res.Type + "/" + res.Name + "/" + res.Supervisor)
		_, dup := end.Records[key]
		require.False(t, dup, "duplicate record %s", key)
		end.Records[key] = res.OwnerVersion + " " + res.Status
	}
	c.stop(t)
	sim, err := simulator.Open(simulator.Config{Path: filepath.Join(c.dataDir, "simulated-targets.db")})
	require.NoError(t, err)
	defer func() { _ = sim.Close() }()
	objs, err := sim.List(context.Background(), "")
	require.NoError(t, err)
	for _, o := range objs {
		key := anon(o.String())
		_, dup := end.Objects[key]
		require.False(t, dup, "duplicate object %s", key)
		require.Equal(t, id, o.Owner.ServiceID, "orphaned target resource %s", o.Key)
		require.Equal(t, version, o.Owner.Version, "%s", key)
		end.Objects[key] = o.Owner.Version + " " + o.Status
	}
	require.Len(t, end.Objects, len(end.Records), "every record has exactly one object: %v vs %v", end.Records, end.Objects)
	moves, err := sim.Moves(context.Background())
	require.NoError(t, err)
	for key, m := range moves {
		end.Moves[anon(key)] = m
	}
	return end
}
