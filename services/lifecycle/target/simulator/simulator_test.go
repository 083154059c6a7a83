package simulator

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/targettest"
)

func TestContract(t *testing.T) {
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
		seed := &Seed{}
		for _, o := range pre {
			seed.Resources = append(seed.Resources, SeedResource{Key: o.Key, Namespace: o.Namespace, Spec: o.Spec})
		}
		s, err := Open(Config{Path: p, Seed: seed})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func open(t *testing.T, seed *Seed, now func() time.Time) *Simulator {
	t.Helper()
	s, err := Open(Config{Path: filepath.Join(t.TempDir(), "sim.db"), Seed: seed, Now: now})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

var svcKey = target.Key{System: target.SystemSupervisor, Scope: "sv1", Kind: "SupervisorService", Identity: "arcturus.example.com"}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	owner := target.Owner{ServiceID: "s", Version: "1"}
	t.Run("fail once", func(t *testing.T) {
		s := open(t, nil, nil)
		require.NoError(t, s.InjectFault(Fault{Kind: "SupervisorService", Op: "apply", Effect: EffectFail, Times: 1}))
		_, err := s.Apply(ctx, target.Desired{Key: svcKey, Spec: map[string]any{}, Owner: owner})
		require.ErrorIs(t, err, target.ErrRejected)
		_, err = s.Apply(ctx, target.Desired{Key: svcKey, Spec: map[string]any{}, Owner: owner})
		require.NoError(t, err, "a fault with Times=1 fires once")
	})
	t.Run("slow then healthy", func(t *testing.T) {
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var mu sync.Mutex
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		s := open(t, nil, clock)
		require.NoError(t, s.InjectFault(Fault{Op: "apply", Effect: EffectSlow, Delay: Duration(5 * time.Second)}))
		obj, err := s.Apply(ctx, target.Desired{Key: svcKey, Spec: map[string]any{}, Owner: owner})
		require.NoError(t, err)
		require.Equal(t, target.StatusBusy, obj.Status)
		mu.Lock()
		now = now.Add(6 * time.Second)
		mu.Unlock()
		got, err := s.Get(ctx, svcKey)
		require.NoError(t, err)
		require.Equal(t, target.StatusHealthy, got.Status)
	})
	t.Run("unhealthy", func(t *testing.T) {
		s := open(t, nil, nil)
		require.NoError(t, s.InjectFault(Fault{Effect: EffectUnhealthy, Message: "pod crash-looping"}))
		obj, err := s.Apply(ctx, target.Desired{Key: svcKey, Spec: map[string]any{}, Owner: owner})
		require.NoError(t, err)
		require.Equal(t, target.StatusUnhealthy, obj.Status)
		require.Equal(t, "pod crash-looping", obj.Message)
	})
	t.Run("unreachable supervisor", func(t *testing.T) {
		s := open(t, &Seed{Supervisors: []SeedSupervisor{{Name: "sv1", Unreachable: true}}}, nil)
		_, err := s.Apply(ctx, target.Desired{Key: svcKey, Spec: map[string]any{}, Owner: owner})
		require.ErrorIs(t, err, target.ErrUnreachable)
		require.ErrorIs(t, s.Delete(ctx, svcKey), target.ErrUnreachable)
		st, err := s.Stage(ctx, target.Desired{Key: svcKey, Spec: map[string]any{}})
		require.NoError(t, err)
		require.False(t, st.Reachable)
		facts, err := s.Facts(ctx, []string{"sv1"})
		require.NoError(t, err)
		require.False(t, facts.Supervisors[0].Reachable)
	})
	t.Run("one version only", func(t *testing.T) {
		s := open(t, nil, nil)
		require.NoError(t, s.InjectFault(Fault{Kind: "SupervisorService", Op: "apply", Version: "2", Effect: EffectUnhealthy}))
		obj, err := s.Apply(ctx, target.Desired{Key: svcKey, Spec: map[string]any{}, Owner: owner})
		require.NoError(t, err)
		require.Equal(t, target.StatusHealthy, obj.Status, "version 1 does not meet it")
		for range 2 {
			obj, err = s.Apply(ctx, target.Desired{Key: svcKey, Spec: map[string]any{}, Owner: target.Owner{ServiceID: "s", Version: "2"}})
			require.NoError(t, err)
			require.Equal(t, target.StatusUnhealthy, obj.Status, "version 2 does, every time")
		}
	})
	t.Run("hang holds the call, then it acts", func(t *testing.T) {
		s := open(t, nil, nil)
		require.NoError(t, s.InjectFault(Fault{Op: "apply", Effect: EffectHang, Delay: Duration(300 * time.Millisecond), Times: 1}))
		start := time.Now()
		obj, err := s.Apply(ctx, target.Desired{Key: svcKey, Spec: map[string]any{}, Owner: owner})
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "the call was held")
		require.Equal(t, target.StatusHealthy, obj.Status, "then it acted")
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		require.NoError(t, s.InjectFault(Fault{Op: "apply", Effect: EffectHang, Delay: Duration(time.Hour)}))
		_, err = s.Apply(short, target.Desired{Key: svcKey, Spec: map[string]any{}, Owner: owner})
		require.ErrorIs(t, err, context.DeadlineExceeded, "a held call ends with its context")
	})
	t.Run("bad fault", func(t *testing.T) {
		s := open(t, nil, nil)
		require.Error(t, s.InjectFault(Fault{Effect: "explode"}))
		require.Error(t, s.InjectFault(Fault{Effect: EffectFail, Op: "create"}))
	})
}

func TestQuotaAndReadyConditions(t *testing.T) {
	ctx := context.Background()
	s := open(t, &Seed{Supervisors: []SeedSupervisor{{Name: "sv1", Available: &target.Quota{CPUMillicores: 4000, MemoryBytes: 8 << 30, StorageBytes: 100 << 30}}}}, nil)
	doc := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{RequestsAnnotation: "cpu=1500m,memory=2Gi,storage=10Gi"}},
		"spec":     map[string]any{"readyConditions": []any{map[string]any{"name": "externalIp"}, map[string]any{"name": "certificates"}}},
	}
	st, err := s.Stage(ctx, target.Desired{Key: svcKey, Spec: doc})
	require.NoError(t, err)
	require.Equal(t, target.Quota{CPUMillicores: 1500, MemoryBytes: 2 << 30, StorageBytes: 10 << 30}, st.Requested)
	obj, err := s.Apply(ctx, target.Desired{Key: svcKey, Spec: doc, Owner: target.Owner{ServiceID: "s"}})
	require.NoError(t, err)
	require.Regexp(t, `^10\.\d+\.\d+\.\d+$`, obj.ReadyConditions["externalIp"])
	require.NotEmpty(t, obj.ReadyConditions["certificates"])
	facts, err := s.Facts(ctx, []string{"sv1"})
	require.NoError(t, err)
	require.Equal(t, int64(2500), facts.Supervisors[0].Available.CPUMillicores, "installed services consume capacity")

	// Each Supervisor counts its own objects only, also when its name
	// begins another's; asked twice, it is counted once.
	on := func(sup string) target.Key {
		return target.Key{System: target.SystemSupervisor, Scope: sup, Kind: svcKey.Kind, Identity: svcKey.Identity}
	}
	_, err = s.Apply(ctx, target.Desired{Key: on("sv10"), Spec: doc, Owner: target.Owner{ServiceID: "s"}})
	require.NoError(t, err)
	facts, err = s.Facts(ctx, []string{"sv1", "sv10", "sv1"})
	require.NoError(t, err)
	require.Len(t, facts.Supervisors, 3)
	require.Equal(t, int64(2500), facts.Supervisors[0].Available.CPUMillicores, "sv1: not sv10's")
	require.Equal(t, facts.Supervisors[0].Available, facts.Supervisors[2].Available)
	def := *s.seed.DefaultAvailable
	require.Equal(t, def.CPUMillicores-1500, facts.Supervisors[1].Available.CPUMillicores, "sv10: its own")
}

func TestParseQuota(t *testing.T) {
	for spec, want := range map[string]target.Quota{
		"cpu=2":                        {CPUMillicores: 2000},
		"cpu=250m,memory=512Mi":        {CPUMillicores: 250, MemoryBytes: 512 << 20},
		"storage=1Ti":                  {StorageBytes: 1 << 40},
		"memory=1024":                  {MemoryBytes: 1024},
		"cpu=1,memory=1Gi,storage=1Gi": {CPUMillicores: 1000, MemoryBytes: 1 << 30, StorageBytes: 1 << 30},
	} {
		got, err := ParseQuota(spec)
		require.NoError(t, err, spec)
		require.Equal(t, want, got, spec)
	}
	for _, bad := range []string{"gpu=1", "cpu", "memory=lots"} {
		_, err := ParseQuota(bad)
		require.Error(t, err, bad)
	}
}

func TestLoadSeed(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "seed.yaml")
	require.NoError(t, writeFile(p, `
vcfaVersion: "9.2.0"
supervisors:
  - name: sv1
    available: {cpuMillicores: 1000, memoryBytes: 1073741824, storageBytes: 1073741824}
resources:
  - system: vcfa
    kind: GlobalRole
    identity: Existing Role
    spec: {spec: {name: Existing Role}}
faults:
  - kind: UserInterfacePlugin
    op: apply
    effect: slow
    delay: 2s
`))
	seed, err := LoadSeed(p)
	require.NoError(t, err)
	require.Equal(t, "9.2.0", seed.VCFAVersion)
	require.Equal(t, Duration(2*time.Second), seed.Faults[0].Delay)
	require.NoError(t, writeFile(p, "faults: [{effect: boom}]"))
	_, err = LoadSeed(p)
	require.ErrorContains(t, err, "effect")
	require.NoError(t, writeFile(p, "unknownField: 1"))
	_, err = LoadSeed(p)
	require.Error(t, err, "unknown fields are refused")
}

// The simulator counts, durably, each time an object is handed to another
// version of its owner (by an apply or a transfer) or removed, not the
// re-applies.
func TestMoves(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sim.db")
	s, err := Open(Config{Path: path})
	require.NoError(t, err)
	at := func(v string) target.Owner { return target.Owner{ServiceID: "s", Version: v} }
	apply := func(v string, spec map[string]any) {
		_, err := s.Apply(ctx, target.Desired{Key: svcKey, Spec: spec, Owner: at(v)})
		require.NoError(t, err)
	}
	apply("1", map[string]any{"v": 1})
	apply("1", map[string]any{"v": 1}) // idempotent: not a move
	_, err = s.Transfer(ctx, svcKey, at("2"), nil)
	require.NoError(t, err)
	apply("2", map[string]any{"v": 2}) // after the transfer: not a move
	apply("1", map[string]any{"v": 1})
	require.NoError(t, s.Delete(ctx, svcKey))
	apply("1", map[string]any{"v": 1})
	require.NoError(t, s.Close())

	s, err = Open(Config{Path: path})
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	moves, err := s.Moves(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]map[string]int{svcKey.String(): {"1": 3, "2": 1, Removed: 1}}, moves, "kept across a reopen")
}
