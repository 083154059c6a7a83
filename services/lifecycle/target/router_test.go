package target_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
)

// The Router sends the keys its primary handles there and everything else
// to the fallback; List and Facts merge both.
func TestRouter(t *testing.T) {
	open := func(name string, seed *simulator.Seed) *simulator.Simulator {
		s, err := simulator.Open(simulator.Config{Path: filepath.Join(t.TempDir(), name), Seed: seed})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	primary := open("primary.db", &simulator.Seed{Supervisors: []simulator.SeedSupervisor{{Name: "sv1", SupportedAPIs: []string{"v1/Secret"}}}})
	fallback := open("fallback.db", nil)
	r := &target.Router{Primary: primary, Fallback: fallback,
		Handles: func(k target.Key) bool { return k.System == target.SystemSupervisor && k.Kind == "Secret" }}
	ctx := context.Background()
	owner := target.Owner{ServiceID: "svc", Version: "1"}
	secret := target.Key{System: target.SystemSupervisor, Scope: "sv1", Kind: "Secret", Identity: "ns/s"}
	role := target.Key{System: target.SystemVCFA, Kind: "GlobalRole", Identity: "r"}
	for _, k := range []target.Key{secret, role} {
		_, err := r.Apply(ctx, target.Desired{Key: k, Spec: map[string]any{"stringData": map[string]any{"a": "b"}}, Owner: owner})
		require.NoError(t, err)
	}
	_, err := primary.Get(ctx, secret)
	require.NoError(t, err, "the Secret went to the primary")
	_, err = fallback.Get(ctx, secret)
	require.ErrorIs(t, err, target.ErrNotFound)
	_, err = fallback.Get(ctx, role)
	require.NoError(t, err, "the role went to the fallback")
	all, err := r.List(ctx, "svc")
	require.NoError(t, err)
	require.Len(t, all, 2)
	secrets, err := r.Secrets(ctx, "sv1", "ns")
	require.NoError(t, err)
	require.Equal(t, map[string]map[string][]byte{"s": {"a": []byte("b")}}, secrets)

	facts, err := r.Facts(ctx, []string{"sv1"})
	require.NoError(t, err)
	require.Equal(t, "9.1.0", facts.VCFAVersion)
	require.Contains(t, facts.Supervisors[0].SupportedAPIs, "v1/Secret", "the primary's own APIs")
	require.Contains(t, facts.Supervisors[0].SupportedAPIs, "services.vcfa.broadcom.com/v2/SupervisorRegistry", "plus the fallback's for kinds it serves")
	require.NotContains(t, facts.Supervisors[0].SupportedAPIs, "services.vcfa.broadcom.com/v2/Secret")
}
