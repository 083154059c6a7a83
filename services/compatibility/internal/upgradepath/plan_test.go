package upgradepath

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/compat"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
)

func newPlanner(t testing.TB) *Planner {
	t.Helper()
	cache, err := constraint.NewCache(256)
	require.NoError(t, err)
	return NewPlanner(compat.NewEvaluator(cache, 0))
}

// v is a version of "svc" with source and destination constraints.
func v(version, source, destination string) compat.PackageVersion {
	return compat.PackageVersion{Name: "svc", Version: version,
		Constraints: compat.Constraints{SourceUpgrade: source, DestinationUpgrade: destination}}
}

func withSupervisor(p compat.PackageVersion, expr string) compat.PackageVersion {
	p.Constraints.SupervisorVersion = expr
	return p
}

var sv1 = compat.Environment{Supervisor: "supervisor-vc1", SupervisorVersion: "9.1.0.0", KubernetesVersion: "v1.30.2+vmware.1"}

func TestPlanGraphs(t *testing.T) {
	p := newPlanner(t)
	tests := []struct {
		name      string
		installed compat.PackageVersion
		available []compat.PackageVersion
		target    string
		envs      []compat.Environment
		found     bool
		path      []string
		// refused lists the expected refused hops as "from->to".
		refused []string
		says    []string
	}{
		{
			name:      "2.0.0 requires >=1.5.0: 1.0.0 → 1.5.0 → 2.0.0",
			installed: v("1.0.0", "", ""),
			available: []compat.PackageVersion{v("1.0.0", "", ""), v("1.5.0", "", ""), v("2.0.0", ">=1.5.0", "")},
			found:     true, path: []string{"1.5.0", "2.0.0"}, refused: []string{"1.0.0->2.0.0"},
			says: []string{"upgrade svc 1.0.0 → 1.5.0 → 2.0.0 (2 hops)", "the direct upgrade is refused: svc 2.0.0 can only be installed as an upgrade from versions >=1.5.0"},
		},
		{
			name:      "a legal direct hop is the shortest path",
			installed: v("1.0.0", "", ""),
			available: []compat.PackageVersion{v("1.5.0", "", ""), v("2.0.0", ">=1.0.0", "")},
			found:     true, path: []string{"2.0.0"},
			says: []string{"upgrade svc 1.0.0 → 2.0.0 directly"},
		},
		{
			name:      "among equally short paths the newer intermediate wins",
			installed: v("1.0.0", "", ""),
			available: []compat.PackageVersion{v("1.1.0", "", ""), v("1.2.0", "", ""), v("2.0.0", ">=1.1.0", "")},
			found:     true, path: []string{"1.2.0", "2.0.0"}, refused: []string{"1.0.0->2.0.0"},
		},
		{
			name:      "a dead end is avoided even when it is the newer intermediate",
			installed: v("1.0.0", "", ""),
			available: []compat.PackageVersion{v("1.2.0", "", ""), v("1.5.0", "", "<1.5.1"), v("2.0.0", ">=1.2.0", "")},
			found:     true, path: []string{"1.2.0", "2.0.0"}, refused: []string{"1.0.0->2.0.0"},
		},
		{
			name:      "a chain of required stepping stones",
			installed: v("1.0.0", "", ""),
			available: []compat.PackageVersion{v("1.5.0", "", ""), v("2.0.0", ">=1.5.0", ""), v("3.0.0", ">=2.0.0", "")},
			found:     true, path: []string{"1.5.0", "2.0.0", "3.0.0"}, refused: []string{"1.0.0->3.0.0"},
			says: []string{"(3 hops)"},
		},
		{
			name:      "destination constraints shape the path",
			installed: v("1.0.0", "", "<2.0.0"),
			available: []compat.PackageVersion{v("1.9.0", "", ""), v("2.0.0", "", ""), v("3.0.0", "", "")},
			found:     true, path: []string{"1.9.0", "3.0.0"}, refused: []string{"1.0.0->3.0.0"},
			says: []string{"the direct upgrade is refused: installed svc 1.0.0 only allows upgrades to versions <2.0.0"},
		},
		{
			name:      "jumps allowed in both directions (a cycle) still give an upward path and end",
			installed: v("1.0.0", ">=0.0.0", ">=0.0.0"),
			available: []compat.PackageVersion{v("1.0.0", ">=0.0.0", ">=0.0.0"), v("1.5.0", ">=0.0.0", ">=0.0.0"), v("2.0.0", ">=1.5.0", "")},
			found:     true, path: []string{"1.5.0", "2.0.0"}, refused: []string{"1.0.0->2.0.0"},
		},
		{
			name:      "a target the environment rules out is unreachable",
			installed: v("1.0.0", "", ""),
			available: []compat.PackageVersion{v("2.0.0", "", ""), withSupervisor(v("3.0.0", "", ""), ">=9.5.0.0")},
			envs:      []compat.Environment{sv1},
			refused:   []string{"1.0.0->3.0.0", "2.0.0->3.0.0"},
			says: []string{"no legal upgrade path for svc from 1.0.0 to 3.0.0", "reachable from 1.0.0: 2.0.0, and none of them leads on to 3.0.0",
				"svc 3.0.0 requires Supervisor >=9.5.0.0", "refused_hops explains every refused hop"},
		},
		{
			name:      "a source constraint no available version satisfies",
			installed: v("1.0.0", "", ""),
			available: []compat.PackageVersion{v("1.5.0", "", ""), v("2.0.0", ">=1.8.0", "")},
			refused:   []string{"1.0.0->2.0.0", "1.5.0->2.0.0"},
			says:      []string{"reachable from 1.0.0: 1.5.0"},
		},
		{
			name:      "an installed version that may not be upgraded at all",
			installed: v("1.0.0", "", "<1.0.0"),
			available: []compat.PackageVersion{v("1.5.0", "", ""), v("2.0.0", "", "")},
			refused:   []string{"1.0.0->1.5.0", "1.0.0->2.0.0"},
			says:      []string{"1.0.0 cannot be upgraded to any version up to 2.0.0"},
		},
		{
			name:      "an explicit target below the newest ignores what is above it",
			installed: v("1.0.0", "", ""),
			available: []compat.PackageVersion{v("1.5.0", "", ""), v("2.0.0", ">=1.5.0", ""), withSupervisor(v("9.0.0", "", ""), ">=99")},
			target:    "2.0.0", envs: []compat.Environment{sv1},
			found: true, path: []string{"1.5.0", "2.0.0"}, refused: []string{"1.0.0->2.0.0"},
		},
		{
			name:      "no target means the newest available version, even an unreachable one",
			installed: v("1.0.0", "", ""),
			available: []compat.PackageVersion{v("1.5.0", "", ""), withSupervisor(v("2.0.0", "", ""), ">=99")},
			envs:      []compat.Environment{sv1},
			refused:   []string{"1.0.0->2.0.0", "1.5.0->2.0.0"},
			says:      []string{"from 1.0.0 to 2.0.0"},
		},
		{
			name:      "already the newest",
			installed: v("2.0.0", "", ""),
			available: []compat.PackageVersion{v("1.0.0", "", ""), v("2.0.0", "", "")},
			found:     true, says: []string{"svc 2.0.0 is already the newest available version"},
		},
		{
			name:      "already at the target",
			installed: v("2.0.0", "", ""),
			available: []compat.PackageVersion{v("2.0.0", "", ""), v("3.0.0", "", "")},
			target:    "2.0.0",
			found:     true, says: []string{"svc is already at 2.0.0"},
		},
		{
			name:      "a target older than the installed version is a rollback, not an upgrade",
			installed: v("2.0.0", "", ">=0.0.0"),
			available: []compat.PackageVersion{v("1.0.0", ">=0.0.0", "")},
			target:    "1.0.0",
			says:      []string{"older than the installed 2.0.0", "rollback"},
		},
		{
			name:      "pre-releases order below their release",
			installed: v("1.0.0", "", ""),
			available: []compat.PackageVersion{v("2.0.0-rc.1", "", ""), v("2.0.0", ">=2.0.0-rc.1", "")},
			found:     true, path: []string{"2.0.0-rc.1", "2.0.0"}, refused: []string{"1.0.0->2.0.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := p.Plan(Request{Installed: tt.installed, Available: tt.available, TargetVersion: tt.target, Environments: tt.envs})
			require.NoError(t, err)
			require.Equal(t, tt.found, plan.Found, plan.Message)
			require.Equal(t, tt.path, plan.Path)
			require.Len(t, plan.PathHops, len(tt.path))
			var refused []string
			for _, h := range plan.RefusedHops {
				refused = append(refused, h.From+"->"+h.To)
				require.NotEmpty(t, h.Results, "a refused hop says why")
				for _, r := range h.Results {
					require.Equal(t, compat.SeverityError, r.Severity)
				}
			}
			require.Equal(t, tt.refused, refused)
			for _, s := range tt.says {
				require.Contains(t, plan.Message, s)
			}
			require.NotEmpty(t, plan.Message)
		})
	}
}

func TestPlanPathHopsCarryNotes(t *testing.T) {
	p := newPlanner(t)
	needsK8s := v("1.5.0", "", "")
	needsK8s.Constraints.KubernetesVersion = ">=1.30.0"
	plan, err := p.Plan(Request{
		Installed:    v("1.0.0", "", ""),
		Available:    []compat.PackageVersion{needsK8s},
		Environments: []compat.Environment{{Supervisor: "sv", SupervisorVersion: "9.1"}},
	})
	require.NoError(t, err)
	require.True(t, plan.Found, plan.Message)
	require.Equal(t, []Hop{{From: "1.0.0", To: "1.5.0", Results: plan.PathHops[0].Results}}, plan.PathHops)
	require.Len(t, plan.PathHops[0].Results, 1)
	require.Equal(t, compat.SeverityWarning, plan.PathHops[0].Results[0].Severity, "an unverified Kubernetes constraint warns")

	// A built-in version is compatible by default: even a destination
	// constraint of the installed version does not refuse it.
	builtIn := v("2.0.0", ">=9.0.0", "")
	builtIn.BuiltIn = true
	plan, err = p.Plan(Request{Installed: v("1.0.0", "", "<1.6.0"), Available: []compat.PackageVersion{builtIn}})
	require.NoError(t, err)
	require.True(t, plan.Found, plan.Message)
	require.Equal(t, []string{"2.0.0"}, plan.Path)
	require.Len(t, plan.PathHops[0].Results, 1)
	require.Equal(t, compat.SeverityInfo, plan.PathHops[0].Results[0].Severity)
}

func TestPlanRefusedHopsAreBounded(t *testing.T) {
	p := newPlanner(t)
	available := make([]compat.PackageVersion, MaxVersions)
	for i := range available {
		available[i] = v(fmt.Sprintf("1.%d.0", i+1), "", "")
	}
	plan, err := p.Plan(Request{Installed: v("1.0.0", "", "<1.0.0"), Available: available})
	require.NoError(t, err)
	require.False(t, plan.Found)
	require.Len(t, plan.RefusedHops, MaxRefusedHops)
	require.Contains(t, plan.Message, fmt.Sprintf("(%d more are not listed)", MaxVersions-MaxRefusedHops))
}

func TestPlanInvalidRequests(t *testing.T) {
	p := newPlanner(t)
	other := v("2.0.0", "", "")
	other.Name = "other"
	tests := []struct {
		name string
		req  Request
		says []string
	}{
		{"installed version not semver", Request{Installed: v("9.1.0.0", "", ""), Available: []compat.PackageVersion{v("9.2.0", "", "")}},
			[]string{`installed.version "9.1.0.0" is not valid semver`}},
		{"available versions not semver, all listed", Request{Installed: v("1.0.0", "", ""), Available: []compat.PackageVersion{v("v2", "", ""), v("1.5.0", "", ""), v("3.0", "", "")}},
			[]string{`available[0].version "v2"`, `available[2].version "3.0"`}},
		{"target not semver", Request{Installed: v("1.0.0", "", ""), TargetVersion: "latest"}, []string{`target_version "latest" is not valid semver`}},
		{"target not available", Request{Installed: v("1.0.0", "", ""), Available: []compat.PackageVersion{v("2.0.0", "", "")}, TargetVersion: "1.5.0"},
			[]string{"target_version 1.5.0 is not among the available versions of svc"}},
		{"another service", Request{Installed: v("1.0.0", "", ""), Available: []compat.PackageVersion{other}}, []string{`available[0].name "other" is not installed.name "svc"`}},
		{"the same version twice", Request{Installed: v("1.0.0", "", ""), Available: []compat.PackageVersion{v("2.0.0", "", ""), v("2.0.0+build.2", "", "")}},
			[]string{"is available twice", `"2.0.0" and "2.0.0+build.2"`}},
		{"an invalid constraint names its version", Request{Installed: v("1.0.0", "", ""), Available: []compat.PackageVersion{v("2.0.0", ">= 1.x.3", "")}},
			[]string{"available[0].constraints.source_upgrade", `">= 1.x.3"`}},
		{"an environment without a name", Request{Installed: v("1.0.0", "", ""), Environments: []compat.Environment{{}}}, []string{"environments[0].supervisor is empty"}},
		{"too many versions", Request{Installed: v("1.0.0", "", ""), Available: make([]compat.PackageVersion, MaxAvailable+1)}, []string{"at most 10000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.Plan(tt.req)
			require.Error(t, err)
			for _, s := range tt.says {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

// BenchmarkPlan plans over 200 versions where every version requires the
// previous minor, the worst case for path length.
func BenchmarkPlan(b *testing.B) {
	p := newPlanner(b)
	available := make([]compat.PackageVersion, 200)
	for i := range available {
		available[i] = v(fmt.Sprintf("1.%d.0", i+1), fmt.Sprintf(">=1.%d.0", i), "")
	}
	env := []compat.Environment{sv1}
	b.ReportAllocs()
	for b.Loop() {
		plan, err := p.Plan(Request{Installed: v("1.0.0", "", ""), Available: available, Environments: env})
		if err != nil || !plan.Found || len(plan.Path) != 200 {
			b.Fatalf("plan: %v %+v", err, plan.Message)
		}
	}
}
