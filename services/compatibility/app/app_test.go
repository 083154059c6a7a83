package app_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	compatibilityv1 "github.com/vcfsm/vcfsm/gen/vcfservices/compatibility/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/compatibility/app"
)

const testToken = "compatibility-test-token-0123456789"

// startServer runs the service as cmd/compatibility does, on a loopback
// port with bearer-token auth, until the test ends.
func startServer(tb testing.TB, cfg app.Config) (compatibilityv1.CompatibilityServiceClient, string) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := app.New(ctx, cfg, slog.New(slog.DiscardHandler))
	require.NoError(tb, err)
	tokens, err := auth.NewTokens(map[string]string{"lifecycle": testToken})
	require.NoError(tb, err)
	srv := grpcx.NewServer(grpcx.ServerConfig{Tokens: tokens})
	svc.Register(srv)
	srv.MarkServing()
	lis, err := grpcx.Listen("127.0.0.1:0")
	require.NoError(tb, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, 5*time.Second) }()
	tb.Cleanup(func() {
		cancel()
		require.NoError(tb, <-done)
		require.NoError(tb, svc.Close())
	})
	conn, err := grpcx.Dial(lis.Addr().String(), testToken)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = conn.Close() })
	return compatibilityv1.NewCompatibilityServiceClient(conn), lis.Addr().String()
}

const packageYAML = `---
apiVersion: data.packaging.carvel.dev/v1alpha1
kind: PackageMetadata
metadata:
  name: myservice.example.com
spec:
  displayName: My Service
---
apiVersion: packaging.carvel.dev/v1alpha1
kind: Package
metadata:
  name: myservice.example.com.2.0.0
  annotations:
    appplatform.vmware.com/supervisor-version-constraints: ">=9.2.0.0"
    appplatform.vmware.com/source-version-upgrade-constraints: ">=1.5.0"
spec:
  refName: myservice.example.com
  version: 2.0.0
  kubernetesVersionSelection:
    constraints: ">=1.30.0"
  valuesSchema:
    openAPIv3:
      type: object
      properties:
        regions:
          type: array
          items:
            type: string
`

func pv(version string, c *compatibilityv1.Constraints) *compatibilityv1.PackageVersion {
	return &compatibilityv1.PackageVersion{Name: "myservice.example.com", Version: version, Constraints: c}
}

func sv(name, version, k8s string) *compatibilityv1.Environment {
	return &compatibilityv1.Environment{Supervisor: name, SupervisorVersion: version, KubernetesVersion: k8s}
}

func requireInvalidArgument(t *testing.T, err error, says ...string) {
	t.Helper()
	st, ok := status.FromError(err)
	require.True(t, ok, "a gRPC status: %v", err)
	require.Equal(t, codes.InvalidArgument, st.Code(), st.Message())
	for _, s := range says {
		require.Contains(t, st.Message(), s)
	}
}

func TestEveryRPCOverGRPC(t *testing.T) {
	client, _ := startServer(t, app.Config{})
	ctx := context.Background()

	t.Run("ValidatePackage extracts the package", func(t *testing.T) {
		resp, err := client.ValidatePackage(ctx, &compatibilityv1.ValidatePackageRequest{
			PackageYaml: []byte(packageYAML),
			Resources: []*commonv1.Resource{
				{ApiVersion: "services.vcfa.broadcom.com/v2", Kind: "SupervisorService", Name: "install"},
				{ApiVersion: "v1", Kind: "Secret", Name: "creds"},
			},
		})
		require.NoError(t, err)
		require.True(t, resp.GetValid(), "%v", resp.GetIssues())
		require.Equal(t, "myservice.example.com", resp.GetPackage().GetName())
		require.Equal(t, "2.0.0", resp.GetPackage().GetVersion())
		require.Equal(t, ">=9.2.0.0", resp.GetPackage().GetConstraints().GetSupervisorVersion())
		require.Equal(t, ">=1.30.0", resp.GetPackage().GetConstraints().GetKubernetesVersion())
		require.Equal(t, ">=1.5.0", resp.GetPackage().GetConstraints().GetSourceUpgrade())
	})

	t.Run("ValidatePackage reports issues", func(t *testing.T) {
		resp, err := client.ValidatePackage(ctx, &compatibilityv1.ValidatePackageRequest{
			PackageYaml: []byte(packageYAML + "---\napiVersion: v1\nkind: ConfigMap\n"),
			Resources:   []*commonv1.Resource{{ApiVersion: "v1", Kind: "ConfigMap", Name: "cm"}},
		})
		require.NoError(t, err)
		require.False(t, resp.GetValid())
		require.Len(t, resp.GetIssues(), 2)
		require.Equal(t, "PACKAGE", resp.GetIssues()[0].GetKind())
		require.Equal(t, "RESOURCE_KIND", resp.GetIssues()[1].GetKind())
		require.Equal(t, "ConfigMap", resp.GetIssues()[1].GetExpression())
	})

	t.Run("ValidatePackage rejects garbage", func(t *testing.T) {
		_, err := client.ValidatePackage(ctx, &compatibilityv1.ValidatePackageRequest{PackageYaml: []byte("just text")})
		requireInvalidArgument(t, err, "package.yml document 1", "not a Kubernetes object")
	})

	t.Run("EvaluateInstall blocks with an actionable message", func(t *testing.T) {
		resp, err := client.EvaluateInstall(ctx, &compatibilityv1.EvaluateInstallRequest{
			Package:      pv("2.0.0", &compatibilityv1.Constraints{SupervisorVersion: ">=9.2.0.0"}),
			Environments: []*compatibilityv1.Environment{sv("supervisor-vc1", "9.1.0.0", "v1.30.2+vmware.1"), sv("supervisor-vc2", "9.2.0.0", "")},
		})
		require.NoError(t, err)
		require.True(t, resp.GetBlocked())
		require.Len(t, resp.GetResults(), 1)
		r := resp.GetResults()[0]
		require.Equal(t, "ERROR", r.GetSeverity())
		require.Equal(t, "SUPERVISOR_VERSION", r.GetKind())
		require.Equal(t, ">=9.2.0.0", r.GetExpression())
		require.Equal(t, "9.1.0.0", r.GetCheckedVersion())
		require.Equal(t, "supervisor-vc1", r.GetSubject())
		require.Equal(t, "appplatform.vmware.com/supervisor-version-constraints", r.GetSource())
		require.Contains(t, r.GetMessage(),
			"myservice.example.com 2.0.0 requires Supervisor >=9.2.0.0 (appplatform.vmware.com/supervisor-version-constraints); supervisor-vc1 is 9.1.0.0")
	})

	t.Run("EvaluateInstall without a package", func(t *testing.T) {
		_, err := client.EvaluateInstall(ctx, &compatibilityv1.EvaluateInstallRequest{})
		requireInvalidArgument(t, err, "package is required")
	})

	t.Run("EvaluateInstall with an invalid expression", func(t *testing.T) {
		_, err := client.EvaluateInstall(ctx, &compatibilityv1.EvaluateInstallRequest{
			Package: pv("2.0.0", &compatibilityv1.Constraints{SupervisorVersion: ">=9.2.0.0 || >=10"}),
		})
		requireInvalidArgument(t, err, "package.constraints.supervisor_version", `">=9.2.0.0 || >=10"`, "Syntax B has no OR")
	})

	t.Run("EvaluateUpgrade", func(t *testing.T) {
		resp, err := client.EvaluateUpgrade(ctx, &compatibilityv1.EvaluateUpgradeRequest{
			Installed:    pv("1.0.0", nil),
			Target:       pv("2.0.0", &compatibilityv1.Constraints{SourceUpgrade: ">=1.5.0"}),
			Environments: []*compatibilityv1.Environment{sv("supervisor-vc1", "9.2.0.0", "v1.30.2+vmware.1")},
		})
		require.NoError(t, err)
		require.True(t, resp.GetBlocked())
		require.Equal(t, "SOURCE_UPGRADE", resp.GetResults()[0].GetKind())
		require.Equal(t, "1.0.0", resp.GetResults()[0].GetCheckedVersion())

		_, err = client.EvaluateUpgrade(ctx, &compatibilityv1.EvaluateUpgradeRequest{})
		requireInvalidArgument(t, err, "installed is required", "target is required")
	})

	t.Run("EvaluateSupervisorUpgrade", func(t *testing.T) {
		resp, err := client.EvaluateSupervisorUpgrade(ctx, &compatibilityv1.EvaluateSupervisorUpgradeRequest{
			Target: sv("supervisor-vc1", "9.1.0.0", "v1.31.0"),
			Packages: []*compatibilityv1.PackageVersion{
				pv("1.0.0", &compatibilityv1.Constraints{SupervisorVersion: ">=9.0.0.0, <9.1.0.0"}),
				{Name: "other", Version: "3.0.0"},
			},
		})
		require.NoError(t, err)
		require.True(t, resp.GetBlocked())
		require.Len(t, resp.GetEvaluations(), 2)
		require.True(t, resp.GetEvaluations()[0].GetBlocked())
		require.Equal(t, "myservice.example.com", resp.GetEvaluations()[0].GetName())
		require.False(t, resp.GetEvaluations()[1].GetBlocked())
		require.Equal(t, "other", resp.GetEvaluations()[1].GetName())
	})

	t.Run("BatchEvaluate", func(t *testing.T) {
		resp, err := client.BatchEvaluate(ctx, &compatibilityv1.BatchEvaluateRequest{Items: []*compatibilityv1.BatchItem{
			{Package: pv("2.0.0", &compatibilityv1.Constraints{KubernetesVersion: ">=1.30.0"}), Environment: sv("a", "9.0", "v1.29.0")},
			{Package: pv("2.0.0", &compatibilityv1.Constraints{KubernetesVersion: ">=1.30.0"}), Environment: sv("b", "9.0", "v1.30.0")},
			{Package: pv("2.0.0", nil), Installed: pv("1.0.0", &compatibilityv1.Constraints{DestinationUpgrade: "<2.0.0"}), Environment: sv("c", "9.0", "")},
		}})
		require.NoError(t, err)
		require.Len(t, resp.GetResults(), 3)
		require.True(t, resp.GetResults()[0].GetBlocked())
		require.Equal(t, "a", resp.GetResults()[0].GetResults()[0].GetSubject())
		require.False(t, resp.GetResults()[1].GetBlocked())
		require.Empty(t, resp.GetResults()[1].GetResults(), "passing checks add no result")
		require.True(t, resp.GetResults()[2].GetBlocked())
		require.Equal(t, "DESTINATION_UPGRADE", resp.GetResults()[2].GetResults()[0].GetKind())

		_, err = client.BatchEvaluate(ctx, &compatibilityv1.BatchEvaluateRequest{Items: []*compatibilityv1.BatchItem{
			{Package: pv("1.0.0", nil), Environment: sv("a", "9.0", "")}, {Environment: sv("b", "9.0", "")}, {Package: pv("1.0.0", nil)},
		}})
		requireInvalidArgument(t, err, "items[1].package is required", "items[2].environment is required")
	})

	t.Run("PlanUpgradePath", func(t *testing.T) {
		resp, err := client.PlanUpgradePath(ctx, &compatibilityv1.PlanUpgradePathRequest{
			Installed: pv("1.0.0", nil),
			Available: []*compatibilityv1.PackageVersion{
				pv("1.0.0", nil), pv("1.5.0", nil), pv("2.0.0", &compatibilityv1.Constraints{SourceUpgrade: ">=1.5.0"}),
			},
			Environments: []*compatibilityv1.Environment{sv("supervisor-vc1", "9.2.0.0", "v1.30.2+vmware.1")},
		})
		require.NoError(t, err)
		require.True(t, resp.GetFound(), resp.GetMessage())
		require.Equal(t, []string{"1.5.0", "2.0.0"}, resp.GetPath())
		require.Len(t, resp.GetPathHops(), 2)
		require.Len(t, resp.GetRefusedHops(), 1)
		require.Equal(t, "1.0.0", resp.GetRefusedHops()[0].GetFromVersion())
		require.Equal(t, "2.0.0", resp.GetRefusedHops()[0].GetToVersion())
		require.Equal(t, "SOURCE_UPGRADE", resp.GetRefusedHops()[0].GetResults()[0].GetKind())

		_, err = client.PlanUpgradePath(ctx, &compatibilityv1.PlanUpgradePathRequest{Installed: pv("9.1.0.0", nil)})
		requireInvalidArgument(t, err, `installed.version "9.1.0.0" is not valid semver`)
	})
}

func TestCallsNeedAToken(t *testing.T) {
	_, addr := startServer(t, app.Config{})
	conn, err := grpcx.Dial(addr, "")
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	_, err = compatibilityv1.NewCompatibilityServiceClient(conn).EvaluateInstall(context.Background(),
		&compatibilityv1.EvaluateInstallRequest{Package: pv("1.0.0", nil)})
	require.Equal(t, codes.Unauthenticated, status.Code(err))
}

func TestBatchLimitIsConfigurable(t *testing.T) {
	client, _ := startServer(t, app.Config{MaxBatchItems: 2})
	items := make([]*compatibilityv1.BatchItem, 3)
	for i := range items {
		items[i] = &compatibilityv1.BatchItem{Package: pv("1.0.0", nil), Environment: sv(fmt.Sprint(i), "9.0", "")}
	}
	_, err := client.BatchEvaluate(context.Background(), &compatibilityv1.BatchEvaluateRequest{Items: items})
	requireInvalidArgument(t, err, "3 items in one batch, at most 2")
}

func TestFlags(t *testing.T) {
	var cfg app.Config
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	require.NoError(t, fs.Parse([]string{"--compat-cache-size", "7", "--compat-max-batch-items", "9"}))
	require.Equal(t, app.Config{CacheSize: 7, MaxBatchItems: 9}, cfg)

	var defaults app.Config
	defaults.RegisterFlags(flag.NewFlagSet("defaults", flag.ContinueOnError))
	require.Equal(t, app.Config{CacheSize: app.DefaultCacheSize, MaxBatchItems: app.DefaultMaxBatchItems}, defaults)

	_, err := app.New(context.Background(), app.Config{CacheSize: -1}, nil)
	require.ErrorContains(t, err, "must be positive")
}
