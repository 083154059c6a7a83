package remote_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/remote"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/targettest"
)

// overTheWire is a simulator behind a real gRPC server on 127.0.0.1,
// reached through the remote client; Close stops the server and the
// simulator (a restart of the simulator server; the client stays).
type overTheWire struct {
	*remote.Client
	stop func()
}

func (o *overTheWire) Close() error { o.stop(); return nil }

func serve(t *testing.T, path string, seed *simulator.Seed) *overTheWire {
	t.Helper()
	sim, err := simulator.Open(simulator.Config{Path: path, Seed: seed})
	require.NoError(t, err)
	srv := grpcx.NewServer(grpcx.ServerConfig{})
	remote.Register(srv, sim)
	srv.MarkServing()
	lis, err := grpcx.Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis, time.Second) }()
	conn, err := grpcx.Dial(lis.Addr().String(), "")
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-served)
			_ = sim.Close()
		})
	}
	t.Cleanup(stop)
	return &overTheWire{Client: remote.NewClient(conn), stop: stop}
}

// The driver contract holds over the wire: a lifecycle replica using the
// simulator server sees the same behaviour, errors included, as one using
// the simulator in process.
func TestContractOverTheWire(t *testing.T) {
	var mu sync.Mutex
	paths := map[*testing.T]string{}
	targettest.Run(t, func(t *testing.T, pre []target.Object) target.Driver {
		mu.Lock()
		p, reopen := paths[t]
		if !reopen {
			p = filepath.Join(t.TempDir(), "sim.db")
			paths[t] = p
		}
		mu.Unlock()
		seed := &simulator.Seed{}
		for _, o := range pre {
			seed.Resources = append(seed.Resources, simulator.SeedResource{Key: o.Key, Namespace: o.Namespace, Spec: o.Spec})
		}
		return serve(t, p, seed)
	})
}

// Faults of the simulated platform reach the client as the driver's
// errors, and a server that is gone is an unreachable target.
func TestErrorsOverTheWire(t *testing.T) {
	d := serve(t, filepath.Join(t.TempDir(), "sim.db"), &simulator.Seed{Faults: []simulator.Fault{
		{Kind: "GlobalRole", Op: "apply", Effect: simulator.EffectUnreachable, Message: "vcfa down"},
	}})
	ctx := context.Background()
	_, err := d.Get(ctx, target.Key{System: target.SystemVCFA, Kind: "GlobalRole", Identity: "none"})
	require.ErrorIs(t, err, target.ErrNotFound)
	_, err = d.Apply(ctx, target.Desired{Key: target.Key{System: target.SystemVCFA, Kind: "GlobalRole", Identity: "r"},
		Spec: map[string]any{"name": "r"}, Owner: target.Owner{ServiceID: "s"}})
	require.ErrorIs(t, err, target.ErrUnreachable)
	require.ErrorContains(t, err, "vcfa down")

	require.NoError(t, d.Close())
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = d.List(short, "s")
	require.ErrorIs(t, err, target.ErrUnreachable, "a simulator server that is gone is an unreachable target: the lifecycle service retries")
}
