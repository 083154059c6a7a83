package compat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
)

func newEvaluator(t testing.TB) *Evaluator {
	t.Helper()
	cache, err := constraint.NewCache(128)
	require.NoError(t, err)
	return NewEvaluator(cache, 0)
}

func pkg(version string, c Constraints) PackageVersion {
	return PackageVersion{Name: "myservice", Version: version, Constraints: c}
}

func env(name, sup, k8s string) Environment {
	return Environment{Supervisor: name, SupervisorVersion: sup, KubernetesVersion: k8s}
}

// want is the expected shape of one result.
type want struct {
	severity Severity
	kind     Kind
	subject  string
	checked  string
	// message fragments that must all appear.
	says []string
}

func requireResults(t *testing.T, got Verdict, blocked bool, wants []want) {
	t.Helper()
	require.Equal(t, blocked, got.Blocked, "blocked")
	require.Len(t, got.Results, len(wants), "results: %+v", got.Results)
	for i, w := range wants {
		r := got.Results[i]
		require.Equal(t, w.severity, r.Severity, "result %d severity", i)
		require.Equal(t, w.kind, r.Kind, "result %d kind", i)
		require.Equal(t, w.subject, r.Subject, "result %d subject", i)
		require.Equal(t, w.checked, r.CheckedVersion, "result %d checked version", i)
		msg := r.Message()
		for _, s := range w.says {
			require.Contains(t, msg, s, "result %d message", i)
		}
		if r.Kind != KindStatic {
			require.Equal(t, r.Kind.Source(), r.Source, "result %d names where the constraint came from", i)
			require.Contains(t, msg, r.Expression, "result %d message names the expression", i)
		}
	}
}

func TestInstall(t *testing.T) {
	e := newEvaluator(t)
	tests := []struct {
		name    string
		pkg     PackageVersion
		envs    []Environment
		blocked bool
		want    []want
	}{
		{
			name:    "requires Supervisor 9.2.0.0 or later, on 9.1.0.0",
			pkg:     pkg("2.0.0", Constraints{SupervisorVersion: ">=9.2.0.0"}),
			envs:    []Environment{env("supervisor-vc1", "9.1.0.0", "v1.30.2+vmware.1")},
			blocked: true,
			want: []want{{SeverityError, KindSupervisorVersion, "supervisor-vc1", "9.1.0.0", []string{
				"myservice 2.0.0 requires Supervisor >=9.2.0.0 (appplatform.vmware.com/supervisor-version-constraints); supervisor-vc1 is 9.1.0.0",
			}}},
		},
		{
			name: "requires Supervisor 9.2.0.0 or later, on 9.2.0.0",
			pkg:  pkg("2.0.0", Constraints{SupervisorVersion: ">=9.2.0.0"}),
			envs: []Environment{env("supervisor-vc1", "9.2.0.0", "")},
		},
		{
			name: "Kubernetes >=1.30.0 on a tolerantly parsed v1.30.2+vmware.1",
			pkg:  pkg("1.0.0", Constraints{KubernetesVersion: ">=1.30.0"}),
			envs: []Environment{env("supervisor-vc1", "9.0.0.0", "v1.30.2+vmware.1")},
		},
		{
			name:    "Kubernetes >=1.30.0 on v1.29.3+vmware.1",
			pkg:     pkg("1.0.0", Constraints{KubernetesVersion: ">=1.30.0"}),
			envs:    []Environment{env("supervisor-vc1", "9.0.0.0", "v1.29.3+vmware.1")},
			blocked: true,
			want: []want{{SeverityError, KindKubernetesVersion, "supervisor-vc1", "v1.29.3+vmware.1", []string{
				"myservice 1.0.0 requires Kubernetes >=1.30.0 (spec.kubernetesVersionSelection.constraints); supervisor-vc1 runs Kubernetes v1.29.3+vmware.1",
			}}},
		},
		{
			name:    "Supervisor version that does not parse is an ERROR",
			pkg:     pkg("1.0.0", Constraints{SupervisorVersion: ">=9.0.0.0"}),
			envs:    []Environment{env("supervisor-vc1", "nine", "")},
			blocked: true,
			want: []want{{SeverityError, KindSupervisorVersion, "supervisor-vc1", "nine", []string{
				`supervisor-vc1 reports Supervisor version "nine", which is not a version`, "correct the Supervisor's version in the inventory",
			}}},
		},
		{
			name:    "Kubernetes version that does not parse even tolerantly is an ERROR",
			pkg:     pkg("1.0.0", Constraints{KubernetesVersion: ">=1.30.0"}),
			envs:    []Environment{env("supervisor-vc1", "9.0.0.0", "v1.30.2.1+vmware")},
			blocked: true,
			want: []want{{SeverityError, KindKubernetesVersion, "supervisor-vc1", "v1.30.2.1+vmware", []string{
				`reports Kubernetes version "v1.30.2.1+vmware", which is not a version`, "kubernetesVersion",
			}}},
		},
		{
			name: "an environment without versions is a WARNING that does not block",
			pkg:  pkg("1.0.0", Constraints{SupervisorVersion: ">=9.0.0.0", KubernetesVersion: ">=1.30.0"}),
			envs: []Environment{env("supervisor-vc1", "", " ")},
			want: []want{
				{SeverityWarning, KindSupervisorVersion, "supervisor-vc1", "", []string{"reports no Supervisor version", "was not verified"}},
				{SeverityWarning, KindKubernetesVersion, "supervisor-vc1", "", []string{"reports no Kubernetes version", "was not verified"}},
			},
		},
		{
			name: "empty constraints are always compatible, whatever the environment says",
			pkg:  pkg("1.0.0", Constraints{}),
			envs: []Environment{env("supervisor-vc1", "garbage", "garbage")},
		},
		{
			name: "blank constraints are always compatible",
			pkg:  pkg("1.0.0", Constraints{SupervisorVersion: "  ", KubernetesVersion: " "}),
			envs: []Environment{env("supervisor-vc1", "9.0.0.0", "1.20.0")},
		},
		{
			name: "built-in services are compatible by default",
			pkg:  PackageVersion{Name: "builtin", Version: "1.0.0", BuiltIn: true, Constraints: Constraints{SupervisorVersion: ">=99.0"}},
			envs: []Environment{env("supervisor-vc1", "9.0.0.0", "")},
			want: []want{{SeverityInfo, KindStatic, "builtin", "1.0.0", []string{"built-in service", "compatible by default"}}},
		},
		{
			name:    "every environment is checked and each failure names its Supervisor",
			pkg:     pkg("2.0.0", Constraints{SupervisorVersion: ">=9.1.0.0", KubernetesVersion: ">=1.30.0"}),
			envs:    []Environment{env("sv-ok", "9.1.0.0", "1.30.0"), env("sv-old", "9.0.0.0", "1.29.0"), env("sv-k8s", "9.2.0.0", "1.28.0")},
			blocked: true,
			want: []want{
				{SeverityError, KindSupervisorVersion, "sv-old", "9.0.0.0", []string{"sv-old is 9.0.0.0"}},
				{SeverityError, KindKubernetesVersion, "sv-old", "1.29.0", []string{"sv-old runs Kubernetes 1.29.0"}},
				{SeverityError, KindKubernetesVersion, "sv-k8s", "1.28.0", []string{"sv-k8s runs Kubernetes 1.28.0"}},
			},
		},
		{
			name: "no environment means nothing to check",
			pkg:  pkg("1.0.0", Constraints{SupervisorVersion: ">=9.0"}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Install(tt.pkg, tt.envs)
			require.NoError(t, err)
			requireResults(t, got, tt.blocked, tt.want)
		})
	}
}

func TestUpgrade(t *testing.T) {
	e := newEvaluator(t)
	v200SourceFrom150 := pkg("2.0.0", Constraints{SourceUpgrade: ">=1.5.0"})
	v100DestBelow200 := pkg("1.0.0", Constraints{DestinationUpgrade: "<2.0.0"})
	combined := func(v string) PackageVersion {
		return pkg(v, Constraints{SourceUpgrade: ">1.0.0", DestinationUpgrade: "<3.0.0"})
	}
	tests := []struct {
		name              string
		installed, target PackageVersion
		envs              []Environment
		blocked           bool
		want              []want
	}{
		{
			name:      "v2.0.0 only from v1.5.0 or later: from 1.0.0 is refused",
			installed: pkg("1.0.0", Constraints{}), target: v200SourceFrom150, blocked: true,
			want: []want{{SeverityError, KindSourceUpgrade, "myservice", "1.0.0", []string{
				"myservice 2.0.0 can only be installed as an upgrade from versions >=1.5.0",
				"appplatform.vmware.com/source-version-upgrade-constraints on myservice 2.0.0", "the installed version is 1.0.0",
			}}},
		},
		{
			name:      "v2.0.0 only from v1.5.0 or later: from 1.5.0 is allowed",
			installed: pkg("1.5.0", Constraints{}), target: v200SourceFrom150,
		},
		{
			name:      "from v1.0.0 only to versions < 2.0.0: to 2.0.0 is refused",
			installed: v100DestBelow200, target: pkg("2.0.0", Constraints{}), blocked: true,
			want: []want{{SeverityError, KindDestinationUpgrade, "myservice", "2.0.0", []string{
				"installed myservice 1.0.0 only allows upgrades to versions <2.0.0",
				"appplatform.vmware.com/destination-version-upgrade-constraints on myservice 1.0.0", "the target version 2.0.0",
			}}},
		},
		{
			name:      "from v1.0.0 only to versions < 2.0.0: to 1.9.0 is allowed",
			installed: v100DestBelow200, target: pkg("1.9.0", Constraints{}),
		},
		{
			name:      "combined: only from a version > 1.0.0 (1.0.0 refused)",
			installed: combined("1.0.0"), target: combined("2.0.0"), blocked: true,
			want: []want{{SeverityError, KindSourceUpgrade, "myservice", "1.0.0", []string{">1.0.0"}}},
		},
		{
			name:      "combined: only from a version > 1.0.0 (1.1.0 allowed)",
			installed: combined("1.1.0"), target: combined("2.0.0"),
		},
		{
			name:      "combined: only to a version < 3.0.0 (3.0.0 refused)",
			installed: combined("2.0.0"), target: combined("3.0.0"), blocked: true,
			want: []want{{SeverityError, KindDestinationUpgrade, "myservice", "3.0.0", []string{"<3.0.0"}}},
		},
		{
			name:      "both upgrade constraints refuse at once",
			installed: pkg("1.0.0", Constraints{DestinationUpgrade: "<2.0.0"}), target: v200SourceFrom150, blocked: true,
			want: []want{
				{SeverityError, KindSourceUpgrade, "myservice", "1.0.0", nil},
				{SeverityError, KindDestinationUpgrade, "myservice", "2.0.0", nil},
			},
		},
		{
			name:      "an installed version that is not semver is an ERROR when a source constraint applies",
			installed: pkg("9.1.0.0", Constraints{}), target: pkg("9.2.0", Constraints{SourceUpgrade: ">=9.0.0"}), blocked: true,
			want: []want{{SeverityError, KindSourceUpgrade, "myservice", "9.1.0.0", []string{
				`the installed version "9.1.0.0" of myservice is not valid semver`, "MAJOR.MINOR.PATCH",
			}}},
		},
		{
			name:      "a target version that is not semver is an ERROR when a destination constraint applies",
			installed: pkg("1.0.0", Constraints{DestinationUpgrade: "<2.0.0"}), target: pkg("v1.5", Constraints{}), blocked: true,
			want: []want{{SeverityError, KindDestinationUpgrade, "myservice", "v1.5", []string{
				`the target version "v1.5" of myservice is not valid semver`,
			}}},
		},
		{
			name:      "non-semver versions are fine when no Syntax A upgrade constraint applies",
			installed: pkg("9.1.0.0", Constraints{}), target: pkg("9.2.0.0", Constraints{}),
		},
		{
			name:      "the target's Supervisor and Kubernetes constraints are checked on every environment",
			installed: pkg("1.0.0", Constraints{SupervisorVersion: ">=99"}), // the installed one's do not matter
			target:    pkg("2.0.0", Constraints{SupervisorVersion: ">=9.2.0.0", KubernetesVersion: ">=1.30.0"}),
			envs:      []Environment{env("supervisor-vc1", "9.1.0.0", "v1.30.1")},
			blocked:   true,
			want:      []want{{SeverityError, KindSupervisorVersion, "supervisor-vc1", "9.1.0.0", []string{"supervisor-vc1 is 9.1.0.0"}}},
		},
		{
			name:      "a built-in target is compatible by default",
			installed: pkg("1.0.0", Constraints{DestinationUpgrade: "<1.0.0"}),
			target:    PackageVersion{Name: "myservice", Version: "2.0.0", BuiltIn: true, Constraints: Constraints{SourceUpgrade: ">=5.0.0"}},
			want:      []want{{SeverityInfo, KindStatic, "myservice", "2.0.0", []string{"compatible by default"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Upgrade(tt.installed, tt.target, tt.envs)
			require.NoError(t, err)
			requireResults(t, got, tt.blocked, tt.want)
		})
	}
}

func TestSupervisorUpgrade(t *testing.T) {
	e := newEvaluator(t)
	pkgs := []PackageVersion{
		{Name: "old-only", Version: "1.0.0", Constraints: Constraints{SupervisorVersion: ">=9.0.0.0, <9.1.0.0"}},
		{Name: "anywhere", Version: "1.0.0"},
		{Name: "needs-k8s", Version: "3.0.0", Constraints: Constraints{KubernetesVersion: ">=1.31.0"}},
	}
	got, err := e.SupervisorUpgrade(env("supervisor-vc1", "9.1.0.0", "v1.31.0+vmware.1"), pkgs)
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.True(t, got[0].Blocked)
	require.Contains(t, got[0].Results[0].Message(), "old-only 1.0.0 requires Supervisor >=9.0.0.0, <9.1.0.0")
	require.Contains(t, got[0].Results[0].Message(), "supervisor-vc1 is 9.1.0.0")
	require.False(t, got[1].Blocked)
	require.Empty(t, got[1].Results)
	require.False(t, got[2].Blocked)
	require.Empty(t, got[2].Results)

	// One service against a new Supervisor version.
	got, err = e.SupervisorUpgrade(env("supervisor-vc1", "9.0.5.0", "v1.30.0"), pkgs[2:])
	require.NoError(t, err)
	require.True(t, got[0].Blocked)
	require.Equal(t, KindKubernetesVersion, got[0].Results[0].Kind)
}

func TestBatch(t *testing.T) {
	e := newEvaluator(t)
	installed := pkg("1.0.0", Constraints{DestinationUpgrade: "<2.0.0"})
	items := []BatchItem{
		{Package: pkg("2.0.0", Constraints{SupervisorVersion: ">=9.2.0.0"}), Environment: env("a", "9.1.0.0", "")},
		{Package: pkg("2.0.0", Constraints{SupervisorVersion: ">=9.2.0.0"}), Environment: env("b", "9.2.0.0", "")},
		{Package: pkg("2.0.0", Constraints{}), Installed: &installed, Environment: env("c", "9.2.0.0", "")},
		{Package: pkg("1.5.0", Constraints{}), Installed: &installed, Environment: env("d", "9.2.0.0", "")},
	}
	got, err := e.Batch(items)
	require.NoError(t, err)
	require.Len(t, got, 4)
	require.True(t, got[0].Blocked)
	require.Equal(t, "a", got[0].Results[0].Subject)
	require.False(t, got[1].Blocked)
	require.True(t, got[2].Blocked, "an item with installed set is an upgrade")
	require.Equal(t, KindDestinationUpgrade, got[2].Results[0].Kind)
	require.False(t, got[3].Blocked)
}

func TestInvalidRequests(t *testing.T) {
	e := newEvaluator(t)
	ok := env("sv", "9.0.0.0", "1.30.0")
	tests := []struct {
		name string
		call func() error
		// says are fragments the error must contain.
		says []string
	}{
		{"invalid Syntax B expression names field and annotation", func() error {
			_, err := e.Install(pkg("1.0.0", Constraints{SupervisorVersion: "==9.0"}), nil)
			return err
		}, []string{"package.constraints.supervisor_version", "appplatform.vmware.com/supervisor-version-constraints", `"==9.0"`}},
		{"every invalid expression is reported at once", func() error {
			_, err := e.Install(pkg("1.0.0", Constraints{
				SupervisorVersion: "9.x", KubernetesVersion: "~1.30", SourceUpgrade: "&&", DestinationUpgrade: "^2.0.0"}), nil)
			return err
		}, []string{`"9.x"`, `"~1.30"`, `"&&"`, `"^2.0.0"`, "package.constraints.kubernetes_version",
			"package.constraints.source_upgrade", "package.constraints.destination_upgrade"}},
		{"empty package name", func() error {
			_, err := e.Install(PackageVersion{Version: "1.0.0"}, nil)
			return err
		}, []string{"package.name is empty"}},
		{"empty Supervisor name", func() error {
			_, err := e.Install(pkg("1.0.0", Constraints{}), []Environment{ok, {SupervisorVersion: "9.0"}})
			return err
		}, []string{"environments[1].supervisor is empty"}},
		{"upgrade across services", func() error {
			other := pkg("2.0.0", Constraints{})
			other.Name = "other"
			_, err := e.Upgrade(pkg("1.0.0", Constraints{}), other, nil)
			return err
		}, []string{`target.name "other" differs from installed.name "myservice"`}},
		{"upgrade names which side is invalid", func() error {
			_, err := e.Upgrade(pkg("1.0.0", Constraints{DestinationUpgrade: "<2"}), pkg("2.0.0", Constraints{}), nil)
			return err
		}, []string{"installed.constraints.destination_upgrade", `"<2"`}},
		{"supervisor upgrade names the package", func() error {
			_, err := e.SupervisorUpgrade(ok, []PackageVersion{pkg("1.0.0", Constraints{}), pkg("1.0.0", Constraints{SupervisorVersion: "|| 9"})})
			return err
		}, []string{"packages[1].constraints.supervisor_version", `"|| 9"`}},
		{"supervisor upgrade needs the Supervisor's name", func() error {
			_, err := e.SupervisorUpgrade(Environment{SupervisorVersion: "9.0"}, nil)
			return err
		}, []string{"target.supervisor is empty"}},
		{"batch names the item", func() error {
			inst := pkg("1.0.0", Constraints{DestinationUpgrade: "1.0"})
			_, err := e.Batch([]BatchItem{{Package: pkg("1.0.0", Constraints{}), Environment: ok}, {Package: pkg("2.0.0", Constraints{}), Installed: &inst, Environment: ok}})
			return err
		}, []string{"items[1].installed.constraints.destination_upgrade", `"1.0"`}},
		{"batch needs the environment's name", func() error {
			_, err := e.Batch([]BatchItem{{Package: pkg("1.0.0", Constraints{})}})
			return err
		}, []string{"items[0].environment.supervisor is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.Error(t, err)
			for _, s := range tt.says {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestInvalidRequestErrorsAreBounded(t *testing.T) {
	e := newEvaluator(t)
	items := make([]BatchItem, 30)
	for i := range items {
		items[i] = BatchItem{Package: pkg("1.0.0", Constraints{SupervisorVersion: "bad"}), Environment: env("sv", "9", "")}
	}
	_, err := e.Batch(items)
	require.Error(t, err)
	require.ErrorIs(t, err, constraint.ErrInvalid)
	lines := strings.Split(err.Error(), "\n")
	require.Len(t, lines, maxReportedErrors+1)
	require.Contains(t, lines[len(lines)-1], "… and 10 more invalid inputs")
}

func TestBatchSizeIsBounded(t *testing.T) {
	cache, err := constraint.NewCache(8)
	require.NoError(t, err)
	e := NewEvaluator(cache, 2)
	_, err = e.Batch(make([]BatchItem, 3))
	require.ErrorIs(t, err, ErrInvalidRequest)
	require.Contains(t, err.Error(), "3 items in one batch, at most 2")
}

func TestPassingChecksAllocateNoMoreThanTheLibraries(t *testing.T) {
	e := newEvaluator(t)
	s := e.NewSession()
	p := pkg("2.0.0", Constraints{SupervisorVersion: ">=9.0.0.0", KubernetesVersion: ">=1.30.0", SourceUpgrade: ">=1.0.0"})
	inst := pkg("1.0.0", Constraints{DestinationUpgrade: "<3.0.0"})
	ct, ci := s.Compile(&p, At("target")), s.Compile(&inst, At("installed"))
	envs := []Environment{env("sv", "9.1.0.0", "v1.30.2+vmware.1")}
	s.Upgrade(ci, ct, envs) // warm the session's memo
	ours := testing.AllocsPerRun(100, func() {
		v := s.Upgrade(ci, ct, envs)
		if v.Blocked || len(v.Results) != 0 {
			t.Fatal("expected a clean verdict")
		}
	})

	// The same four checks made directly on the libraries: hashicorp's
	// Version.Compare formats both versions, blang's Range does not allocate.
	sup, err := constraint.Parse(constraint.SyntaxB, ">=9.0.0.0")
	require.NoError(t, err)
	var a [3]*constraint.Constraint
	for i, expr := range []string{">=1.30.0", ">=1.0.0", "<3.0.0"} {
		a[i], err = constraint.Parse(constraint.SyntaxA, expr)
		require.NoError(t, err)
	}
	sv, err := constraint.ParseSupervisorVersion("9.1.0.0")
	require.NoError(t, err)
	kv, err := constraint.ParseKubernetesVersion("v1.30.2+vmware.1")
	require.NoError(t, err)
	v1, err := constraint.ParseServiceVersion("1.0.0")
	require.NoError(t, err)
	v2, err := constraint.ParseServiceVersion("2.0.0")
	require.NoError(t, err)
	bare := testing.AllocsPerRun(100, func() {
		if !sup.AllowsVersion(sv) || !a[0].AllowsSemver(&kv) || !a[1].AllowsSemver(&v1) || !a[2].AllowsSemver(&v2) {
			t.Fatal("expected every check to pass")
		}
	})
	// AllocsPerRun reports whole allocations per run: compare them as counts.
	require.Equal(t, int(bare), int(ours), "a passing evaluation allocates nothing beyond what the libraries do")
}
