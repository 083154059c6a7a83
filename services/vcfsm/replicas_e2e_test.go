package vcfsm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/seal"
	"github.com/vcfsm/vcfsm/platform/store/etcdstore/etcdtest"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/remote"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// replicaTTL is the replicas' --owner-ttl: short, so the test is quick.
const replicaTTL = 2 * time.Second

// held is a target driver whose deletes wait while the hold is on, even
// when their context ends: a replica frozen in the middle of a step.
type held struct {
	target.Driver
	mu      sync.Mutex
	release chan struct{} // nil: not holding
	waiting int
}

func (h *held) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.release = make(chan struct{})
}

func (h *held) let() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.release != nil {
		close(h.release)
		h.release = nil
	}
}

func (h *held) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waiting
}

func (h *held) Delete(ctx context.Context, k target.Key) error {
	h.mu.Lock()
	release := h.release
	if release != nil {
		h.waiting++
	}
	h.mu.Unlock()
	if release != nil {
		<-release
		h.mu.Lock()
		h.waiting--
		h.mu.Unlock()
	}
	return h.Driver.Delete(ctx, k)
}

// newReplicas prepares lifecycle replicas sharing one simulated platform
// (w.sim); replica starts one (a whole all-in-one) on the given etcd, and
// the options say how it reaches w.sim.
func newReplicas(t *testing.T) (*world, func(etcd string, opts ...onebox.Option) *onebox.Box) {
	t.Helper()
	sim, err := simulator.Open(simulator.Config{Path: filepath.Join(t.TempDir(), "platform.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sim.Close() })
	w := &world{reg: bundletest.NewRegistry(t), tars: bundletest.NewTarServer(t), sim: sim}
	inv := filepath.Join(t.TempDir(), "inventory.yaml")
	require.NoError(t, os.WriteFile(inv, []byte(inventoryYAML), 0o600))
	// Replicas on one etcd share one keyring, as deployment.md says.
	keys, _, err := seal.EnsureDevKey(t.TempDir())
	require.NoError(t, err)
	return w, func(etcd string, opts ...onebox.Option) *onebox.Box {
		return onebox.Start(t, append([]onebox.Option{func(c *app.Config) {
			c.Lifecycle.EncryptionKeyFile = keys
			c.Lifecycle.SourceRootCAs = w.tars.RootCAs()
			c.Lifecycle.InventoryFile = inv
			c.Lifecycle.ReconcileInterval = 100 * time.Millisecond
			c.Lifecycle.StepTimeout = time.Minute
			c.Lifecycle.Store, c.Lifecycle.EtcdEndpoints, c.Lifecycle.EtcdPrefix = "etcd", etcd, "/replicas/"
			c.Lifecycle.OwnerTTL = replicaTTL
		}}, opts...)...)
	}
}

// driving makes a replica use drv as its target driver, in process.
func driving(drv target.Driver) onebox.Option {
	return func(c *app.Config) {
		c.Lifecycle.WrapDriver = func(target.Driver) target.Driver { return drv }
	}
}

// serveTargets serves sim as a simulator server on 127.0.0.1 (what the
// simulator binary runs) and returns its address.
func serveTargets(t *testing.T, sim *simulator.Simulator) string {
	t.Helper()
	srv := grpcx.NewServer(grpcx.ServerConfig{})
	remote.Register(srv, sim)
	srv.MarkServing()
	lis, err := grpcx.Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis, time.Second) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
	})
	return lis.Addr().String()
}

// A watch opened on replica A reports the changes made through replica B,
// and A's GET shows them: every replica's view follows the store. Both
// reach the platform through the simulator server (--target-addr).
func TestReplicasShareOneView(t *testing.T) {
	endpoint := etcdtest.Start(t)
	w, replica := newReplicas(t)
	targets := func(c *app.Config) { c.Lifecycle.TargetAddr = serveTargets(t, w.sim) }
	a, b := replica(endpoint, targets), replica(endpoint, targets)
	wa, wb := *w, *w
	wa.box, wb.box = a, b

	id := wb.create(t, wb.publish(t, v1))
	wa.waitStatus(t, id, "Unresolved") // created through B, seen on A
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	events := wa.watch(t, ctx, id)
	wb.activate(t, id)
	var seen []string
	for ev := range events {
		seen = append(seen, ev.Status)
		if ev.Status == "Healthy" {
			break
		}
	}
	require.Contains(t, seen, "Busy", "A's watch reported the activation's progress made on B")
	require.Equal(t, "Healthy", seen[len(seen)-1], "A's watch saw the end of B's activation: %v", seen)
	v := wa.get(t, id)
	require.Equal(t, "active", v.LifecycleState)
	require.Len(t, v.State.Resources, 5, "A's read model shows B's resources")
}

// Three lifecycle replicas on one embedded etcd, sharing one simulated
// platform: only the owner of a service runs its operation; when the
// owner is cut off from etcd mid-step, another replica takes the operation
// over after the owner's lease expires and finishes it at the journaled
// step; the cut-off owner, let go and reconnected, changes nothing.
func TestReplicasOwnershipTakeoverFencing(t *testing.T) {
	endpoint := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, endpoint[len("http://"):])
	w, replica := newReplicas(t)
	frozen := &held{Driver: w.sim}
	sim := w.sim
	a := replica(proxy.URL(), driving(frozen))
	t.Cleanup(frozen.let) // before A stops, even when the test failed
	replica(endpoint, driving(sim))
	replica(endpoint, driving(sim))
	w.box = a

	id := w.installed(t, w.publish(t, v1))
	require.Len(t, w.owned(t, id), 5)

	// A runs the delete and is frozen inside its first step.
	frozen.hold()
	resp := a.Do(t, http.MethodDelete, "/v2/vcf-services/"+id, nil)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	poll(t, "replica A frozen in remove-resources", 30*time.Second, frozen.held, func(n int) bool { return n > 0 })

	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close() })
	ownerKey := "/replicas/_owners/service/" + id
	owner := func() string {
		got, err := raw.Get(context.Background(), ownerKey)
		require.NoError(t, err)
		if len(got.Kvs) == 0 {
			return ""
		}
		return string(got.Kvs[0].Value)
	}
	require.Equal(t, a.Sys.Lifecycle().Replica(), owner(), "the replica that runs the operation owns the service")
	// B and C sweep for orphaned operations several times a TTL; while A's
	// lease lives they must leave the operation alone.
	waitLeases(t, 2*replicaTTL)
	require.Equal(t, a.Sys.Lifecycle().Replica(), owner())
	require.Len(t, w.owned(t, id), 5, "no other replica ran the held step")

	// A is cut off from etcd: its lease expires, B or C takes over.
	cut := time.Now()
	proxy.Cut()
	poll(t, "another replica to finish the delete", 30*time.Second, func() bool {
		got, err := raw.Get(context.Background(), "/replicas/services/"+id)
		require.NoError(t, err)
		return len(got.Kvs) == 0
	}, func(gone bool) bool { return gone })
	t.Logf("takeover: the delete finished %s after the owner was cut off (owner TTL %s)", time.Since(cut).Round(10*time.Millisecond), replicaTTL)
	require.Empty(t, w.owned(t, id), "the other replica cleaned up the targets")
	op := poll(t, "the delete operation to be closed", 30*time.Second, func() journaled { return deleteOperation(t, raw, id) },
		func(op journaled) bool { return op.Outcome != "Running" && op.Outcome != "Pending" })
	require.Equal(t, "Succeeded", op.Outcome)
	for _, s := range op.Steps {
		require.Equal(t, "Succeeded", s.Status, "step %s", s.Name)
	}

	// A reconnects and wakes up: it must write nothing more.
	revision := etcdRevision(t, raw)
	proxy.Restore()
	frozen.let()
	poll(t, "replica A's held calls to return", 30*time.Second, frozen.held, func(n int) bool { return n == 0 })
	waitLeases(t, replicaTTL)
	require.Equal(t, op, deleteOperation(t, raw, id), "the journal is as the new owner left it")
	got, err := raw.Get(context.Background(), "/replicas/", clientv3.WithPrefix(), clientv3.WithMinModRev(revision+1))
	require.NoError(t, err)
	for _, kv := range got.Kvs {
		require.NotContains(t, string(kv.Key), "/replicas/services/", "a service record written after the takeover: %s", kv.Key)
		require.NotContains(t, string(kv.Key), "/replicas/operations/", "an operation record written after the takeover: %s", kv.Key)
	}
}

type journaled struct {
	Type    string `json:"type"`
	Outcome string `json:"outcome"`
	Steps   []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"steps"`
}

// deleteOperation reads the service's delete operation from the journal.
func deleteOperation(t *testing.T, raw *clientv3.Client, id string) journaled {
	t.Helper()
	got, err := raw.Get(context.Background(), "/replicas/operations/"+id+"|", clientv3.WithPrefix())
	require.NoError(t, err)
	for _, kv := range got.Kvs {
		var op journaled
		require.NoError(t, json.Unmarshal(kv.Value[8:], &op), "the record is an 8-byte revision and JSON")
		if op.Type == "delete" {
			return op
		}
	}
	t.Fatalf("no delete operation journaled for %s", id)
	return journaled{}
}

func etcdRevision(t *testing.T, raw *clientv3.Client) int64 {
	t.Helper()
	got, err := raw.Get(context.Background(), "/replicas/_meta/schema_version")
	require.NoError(t, err)
	return got.Header.Revision
}

// waitLeases lets d of wall-clock time pass (lease expiry and the
// replicas' sweeps are timed by etcd and tickers, not by the test).
func waitLeases(t *testing.T, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	<-timer.C
}
