package app_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/blang/semver/v4"
	version "github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"

	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	"github.com/vcfsm/vcfsm/services/compatibility/app"
)

// The performance goal: over gRPC on loopback, BatchEvaluate sustains at
// least 200,000 checks/s on the project's 2-core machine. The README
// records the figures of BenchmarkBatchEvaluateGRPC.

const checksPerItem = 4 // Supervisor, Kubernetes, source and destination

var (
	batchSupervisorConstraints = []string{">=9.0.0.0", ">9.0.0.0, <9.1.0.0", "~>9.0.1", ">=9.2.0.0"}
	batchSupervisorVersions    = []string{"9.0.0.0", "9.0.5.0", "9.1.0.0", "9.2.1.0", "9.0.1.3"}
)

// upgradeBatch builds n upgrade items of four checks each, with a mix of
// passing and failing checks, as lifecycle sends when it evaluates every
// installed service against every Supervisor.
func upgradeBatch(n int) []*compatibilityv1.BatchItem {
	items := make([]*compatibilityv1.BatchItem, n)
	for i := range items {
		k8s := "v1.30.2+vmware.1"
		if i%7 == 0 {
			k8s = "v1.29.4+vmware.2"
		}
		items[i] = &compatibilityv1.BatchItem{
			Package: &compatibilityv1.PackageVersion{Name: "svc", Version: "2.0.0", Constraints: &compatibilityv1.Constraints{
				SupervisorVersion: batchSupervisorConstraints[i%len(batchSupervisorConstraints)],
				KubernetesVersion: ">=1.30.0",
				SourceUpgrade:     ">=1.2.0",
			}},
			Installed: &compatibilityv1.PackageVersion{Name: "svc", Version: fmt.Sprintf("1.%d.0", i%8),
				Constraints: &compatibilityv1.Constraints{DestinationUpgrade: "<3.0.0"}},
			Environment: &compatibilityv1.Environment{
				Supervisor:        fmt.Sprintf("supervisor-%d", i%16),
				SupervisorVersion: batchSupervisorVersions[i%len(batchSupervisorVersions)],
				KubernetesVersion: k8s,
			},
		}
	}
	return items
}

// expectBlocked decides an item with the two libraries directly.
func expectBlocked(t *testing.T, it *compatibilityv1.BatchItem) bool {
	t.Helper()
	sup, err := version.NewConstraint(it.GetPackage().GetConstraints().GetSupervisorVersion())
	require.NoError(t, err)
	supV, err := version.NewVersion(it.GetEnvironment().GetSupervisorVersion())
	require.NoError(t, err)
	k8s := semver.MustParseRange(it.GetPackage().GetConstraints().GetKubernetesVersion())
	k8sV, err := semver.ParseTolerant(it.GetEnvironment().GetKubernetesVersion())
	require.NoError(t, err)
	src := semver.MustParseRange(it.GetPackage().GetConstraints().GetSourceUpgrade())
	dst := semver.MustParseRange(it.GetInstalled().GetConstraints().GetDestinationUpgrade())
	installed := semver.MustParse(it.GetInstalled().GetVersion())
	target := semver.MustParse(it.GetPackage().GetVersion())
	return !sup.Check(supV) || !k8s(k8sV) || !src(installed) || !dst(target)
}

func TestLargeBatchOverGRPC(t *testing.T) {
	client, _ := startServer(t, app.Config{})
	items := upgradeBatch(10_000)
	resp, err := client.BatchEvaluate(context.Background(), &compatibilityv1.BatchEvaluateRequest{Items: items})
	require.NoError(t, err)
	require.Len(t, resp.GetResults(), len(items))
	blocked := 0
	for i, r := range resp.GetResults() {
		want := expectBlocked(t, items[i])
		require.Equal(t, want, r.GetBlocked(), "item %d", i)
		require.Equal(t, want, len(r.GetResults()) > 0, "item %d: results only for failing checks", i)
		for _, cr := range r.GetResults() {
			subject := items[i].GetEnvironment().GetSupervisor()
			if cr.GetKind() == "SOURCE_UPGRADE" || cr.GetKind() == "DESTINATION_UPGRADE" {
				subject = "svc"
			}
			require.Equal(t, subject, cr.GetSubject(), "item %d %s", i, cr.GetKind())
			require.Equal(t, "ERROR", cr.GetSeverity(), "item %d", i)
		}
		if want {
			blocked++
		}
	}
	require.Greater(t, blocked, len(items)/5, "the batch mixes verdicts")
	require.Less(t, blocked, len(items)*4/5, "the batch mixes verdicts")
}

// BenchmarkBatchEvaluateGRPC drives the real server on 127.0.0.1 from four
// concurrent clients (two per core), each call carrying the given number
// of upgrade items of four checks each.
func BenchmarkBatchEvaluateGRPC(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			client, _ := startServer(b, app.Config{})
			req := &compatibilityv1.BatchEvaluateRequest{Items: upgradeBatch(n)}
			b.SetParallelism(2)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.BatchEvaluate(context.Background(), req)
					if err != nil || len(resp.GetResults()) != n {
						b.Errorf("BatchEvaluate: %v", err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*n*checksPerItem)/b.Elapsed().Seconds(), "checks/s")
		})
	}
}

func TestConcurrentCallsShareTheCache(t *testing.T) {
	client, _ := startServer(t, app.Config{CacheSize: 4}) // small, so entries are evicted while in use
	items := upgradeBatch(500)
	want := make([]bool, len(items))
	for i, it := range items {
		want[i] = expectBlocked(t, it)
	}
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for round := 0; round < 5; round++ {
				resp, err := client.BatchEvaluate(context.Background(), &compatibilityv1.BatchEvaluateRequest{Items: items})
				if err != nil {
					errs <- err
					return
				}
				for i, r := range resp.GetResults() {
					if r.GetBlocked() != want[i] {
						errs <- fmt.Errorf("round %d item %d: blocked=%v, want %v", round, i, r.GetBlocked(), want[i])
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		require.NoError(t, <-errs)
	}
}
