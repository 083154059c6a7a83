package compat

import (
	"fmt"
	"testing"
	"time"

	"github.com/blang/semver/v4"
	version "github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
)

// The performance goal: evaluating 100,000 pre-parsed (constraint,
// version) checks in-process stays within 1.5x of a bare loop calling the
// two libraries on the same pre-parsed values. The README records the
// figures of BenchmarkChecks.

const benchChecks = 100_000

var (
	benchA = []string{">=1.30.0", ">1.0.0 <2.0.0", ">=1.5.0 <2.0.0 || >=2.1.0", "1.2.x", "<3.0.0"}
	benchB = []string{">=9.0.0.0", ">9.0.0.0, <9.1.0.0", "~>9.0.1", ">=9.2.0.0"}
	// Versions are picked so that about a third of the checks fail.
	benchSemver  = []string{"1.30.2", "1.5.0", "2.0.5", "1.2.7", "0.9.0", "1.31.0"}
	benchVersion = []string{"9.0.0.0", "9.0.5.0", "9.1.0.0", "9.2.1.0", "9.0.1.3"}
)

// barePair is what a bare loop over the libraries works on.
type barePair struct {
	r  semver.Range
	sv semver.Version
	c  version.Constraints
	v  *version.Version
}

// buildBenchChecks pre-parses every distinct expression and version once,
// for both loops, as the evaluator's session memo does in production.
func buildBenchChecks(tb testing.TB) ([]Check, []barePair) {
	tb.Helper()
	ourA, ourB := map[string]*constraint.Constraint{}, map[string]*constraint.Constraint{}
	ourSemver, ourVersion := map[string]*semver.Version{}, map[string]*version.Version{}
	libA, libB := map[string]semver.Range{}, map[string]version.Constraints{}
	libSemver, libVersion := map[string]semver.Version{}, map[string]*version.Version{}
	for _, expr := range benchA {
		c, err := constraint.Parse(constraint.SyntaxA, expr)
		require.NoError(tb, err)
		ourA[expr] = c
		r, err := semver.ParseRange(expr)
		require.NoError(tb, err)
		libA[expr] = r
	}
	for _, expr := range benchB {
		c, err := constraint.Parse(constraint.SyntaxB, expr)
		require.NoError(tb, err)
		ourB[expr] = c
		cs, err := version.NewConstraint(expr)
		require.NoError(tb, err)
		libB[expr] = cs
	}
	for _, raw := range benchSemver {
		v, err := constraint.ParseKubernetesVersion(raw)
		require.NoError(tb, err)
		ourSemver[raw] = &v
		sv, err := semver.ParseTolerant(raw)
		require.NoError(tb, err)
		libSemver[raw] = sv
	}
	for _, raw := range benchVersion {
		v, err := constraint.ParseSupervisorVersion(raw)
		require.NoError(tb, err)
		ourVersion[raw] = v
		hv, err := version.NewVersion(raw)
		require.NoError(tb, err)
		libVersion[raw] = hv
	}

	checks := make([]Check, benchChecks)
	pairs := make([]barePair, benchChecks)
	for i := range checks {
		if i%2 == 0 {
			expr, raw := benchA[i/2%len(benchA)], benchSemver[i/2%len(benchSemver)]
			checks[i] = Check{Kind: KindKubernetesVersion, Constraint: ourA[expr], Semver: ourSemver[raw], CheckedVersion: raw,
				Subject: "supervisor-vc1", Package: "myservice", PackageVersion: "2.0.0"}
			pairs[i] = barePair{r: libA[expr], sv: libSemver[raw]}
			continue
		}
		expr, raw := benchB[i/2%len(benchB)], benchVersion[i/2%len(benchVersion)]
		checks[i] = Check{Kind: KindSupervisorVersion, Constraint: ourB[expr], Version: ourVersion[raw], CheckedVersion: raw,
			Subject: "supervisor-vc1", Package: "myservice", PackageVersion: "2.0.0"}
		pairs[i] = barePair{c: libB[expr], v: libVersion[raw]}
	}
	return checks, pairs
}

func bareLoop(pairs []barePair) int {
	failed := 0
	for i := range pairs {
		p := &pairs[i]
		var ok bool
		if p.c != nil {
			ok = p.c.Check(p.v)
		} else {
			ok = p.r(p.sv)
		}
		if !ok {
			failed++
		}
	}
	return failed
}

func evaluateLoop(checks []Check, results []Result) []Result {
	results = results[:0]
	for i := range checks {
		results = checks[i].Append(results)
	}
	return results
}

func TestBenchmarkLoopsAgree(t *testing.T) {
	checks, pairs := buildBenchChecks(t)
	results := evaluateLoop(checks, nil)
	failed := bareLoop(pairs)
	require.Len(t, results, failed, "both loops fail the same checks")
	require.Greater(t, failed, benchChecks/5, "the data exercises failing checks")
	require.Less(t, failed, benchChecks*4/5, "the data exercises passing checks")
	for i := range checks {
		p := &pairs[i]
		want := false
		if p.c != nil {
			want = p.c.Check(p.v)
		} else {
			want = p.r(p.sv)
		}
		require.Equal(t, want, checks[i].Passes(), "check %d", i)
	}
}

// BenchmarkChecks compares our evaluation of 100,000 pre-parsed checks
// (results for the failing ones included, messages not rendered) with a
// bare loop over the libraries.
func BenchmarkChecks(b *testing.B) {
	checks, pairs := buildBenchChecks(b)
	b.Run("bare-libraries", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if bareLoop(pairs) == 0 {
				b.Fatal("no failures")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchChecks), "ns/check")
	})
	b.Run("evaluator", func(b *testing.B) {
		b.ReportAllocs()
		results := make([]Result, 0, benchChecks)
		for b.Loop() {
			results = evaluateLoop(checks, results)
			if len(results) == 0 {
				b.Fatal("no failures")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchChecks), "ns/check")
	})
	// The two loops alternate within each iteration, so load from other
	// processes hits both alike and the ratio stays meaningful.
	b.Run("ratio", func(b *testing.B) {
		results := make([]Result, 0, benchChecks)
		var bare, ours time.Duration
		for b.Loop() {
			start := time.Now()
			failed := bareLoop(pairs)
			bare += time.Since(start)
			start = time.Now()
			results = evaluateLoop(checks, results)
			ours += time.Since(start)
			if failed != len(results) {
				b.Fatalf("loops disagree: %d vs %d", failed, len(results))
			}
		}
		b.ReportMetric(float64(ours)/float64(bare), "evaluator/bare")
	})
	b.Run("evaluator+messages", func(b *testing.B) {
		b.ReportAllocs()
		results := make([]Result, 0, benchChecks)
		for b.Loop() {
			results = evaluateLoop(checks, results)
			for i := range results {
				if results[i].Message() == "" {
					b.Fatal("empty message")
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchChecks), "ns/check")
	})
}

// BenchmarkBatch measures Evaluator.Batch end to end in-process: parsing
// through the session memo, evaluation and results, for 10,000 upgrade
// items of four checks each.
func BenchmarkBatch(b *testing.B) {
	e := newEvaluator(b)
	items := make([]BatchItem, 10_000)
	installed := make([]PackageVersion, 8)
	for i := range installed {
		installed[i] = PackageVersion{Name: "svc", Version: fmt.Sprintf("1.%d.0", i), Constraints: Constraints{DestinationUpgrade: "<3.0.0"}}
	}
	for i := range items {
		items[i] = BatchItem{
			Package: PackageVersion{Name: "svc", Version: "2.0.0", Constraints: Constraints{
				SupervisorVersion: benchB[i%len(benchB)], KubernetesVersion: ">=1.30.0", SourceUpgrade: ">=1.2.0"}},
			Installed:   &installed[i%len(installed)],
			Environment: Environment{Supervisor: fmt.Sprintf("sv-%d", i%16), SupervisorVersion: benchVersion[i%len(benchVersion)], KubernetesVersion: "v1.30.2+vmware.1"},
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Batch(items); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(items)*4)/b.Elapsed().Seconds(), "checks/s")
}
