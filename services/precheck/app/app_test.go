package app_test

import (
	"context"
	"crypto/tls"
	"flag"
	"io"
	"log"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/logging"
	"github.com/vcfsm/vcfsm/services/precheck/app"
	"github.com/vcfsm/vcfsm/services/precheck/internal/samplehook"
	"github.com/vcfsm/vcfsm/services/precheck/internal/testcerts"
)

const (
	namespace   = "svc-arcturus-example-com"
	hookHost    = "ucs." + namespace + ".svc.cluster.local"
	strictHost  = "strict." + namespace + ".svc.cluster.local"
	hookToken   = "platform-issued-token"
	caSecret    = "ucs-service-ca-cert"
	pluginImage = "arcturus.example.com/vcf-plugins/arcturus-ui-plugin.zip:2.11.1"
)

// startSampleHook serves the sample hook over HTTPS on 127.0.0.1 with a
// certificate the CA issued for host.
func startSampleHook(t *testing.T, ca *testcerts.CA, host string, cfg samplehook.Config) string {
	t.Helper()
	cert, err := ca.Issue(host)
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(samplehook.NewHandler(cfg))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert.TLS}}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// startService runs the precheck service on a real gRPC server on
// 127.0.0.1 and returns a client.
func startService(t *testing.T, cfg app.Config) precheckv1.PrecheckServiceClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	svc, err := app.New(ctx, cfg, logging.Discard())
	require.NoError(t, err)
	srv := grpcx.NewServer(grpcx.ServerConfig{})
	svc.Register(srv)
	srv.MarkServing()
	lis, err := grpcx.Listen("127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis, time.Second) }()
	conn, err := grpcx.Dial(lis.Addr().String(), "")
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, svc.Close())
	})
	return precheckv1.NewPrecheckServiceClient(conn)
}

func hookPackage(service, url string) []byte {
	return []byte(`---
apiVersion: data.packaging.carvel.dev/v1alpha1
kind: PackageMetadata
metadata:
  name: arcturus.example.com
---
apiVersion: data.packaging.carvel.dev/v1alpha1
kind: Package
metadata:
  name: arcturus.example.com.1.0.0
  annotations:
    appplatform.vmware.com/compatibility-check_service: ` + service + `
    appplatform.vmware.com/compatibility-check_port: "443"
    appplatform.vmware.com/compatibility-check_protocol: https
    appplatform.vmware.com/compatibility-check_url: ` + url + `
    appplatform.vmware.com/compatibility-check_method: POST
    appplatform.vmware.com/compatibility-check_ca_secret: ` + caSecret + `
spec:
  refName: arcturus.example.com
  version: 1.0.0
`)
}

var targetPackage = []byte(`apiVersion: data.packaging.carvel.dev/v1alpha1
kind: Package
metadata:
  name: arcturus.example.com.2.0.0
  annotations:
    appplatform.vmware.com/compatibility-check_data: |
      {"check": "storage-migration-ready", "timeout": "60s"}
spec:
  refName: arcturus.example.com
  version: 2.0.0
`)

// TestEndToEnd runs the service over gRPC against the sample hook over
// HTTPS with real certificates, as the dev stack does.
func TestEndToEnd(t *testing.T) {
	ca, err := testcerts.NewCA("arcturus CA")
	require.NoError(t, err)
	hookAddr := startSampleHook(t, ca, hookHost, samplehook.Config{
		Token: hookToken,
		Answers: samplehook.File{
			Answer: samplehook.Answer{Results: []samplehook.Result{
				{Severity: "warning", Message: "Custom resource X will be deprecated in the target version."},
				{Severity: "DEBUG", Message: "dropped"},
			}},
			Paths: map[string]samplehook.Answer{"blocked": {Results: []samplehook.Result{{Severity: "ERROR", Message: "Migration prerequisite missing: backing PVC is not bound."}}}},
		},
	})
	strictAddr := startSampleHook(t, ca, strictHost, samplehook.Config{Token: "another-token"})

	client := startService(t, app.Config{
		HookToken:   hookToken,
		HookTimeout: 10 * time.Second,
		Resolve:     []string{hookHost + "=" + hookAddr, strictHost + "=" + strictAddr},
	})
	ctx := context.Background()
	secrets := map[string]*precheckv1.SecretData{caSecret: {Data: map[string][]byte{"ca.crt": ca.PEM}}}
	req := func(service, url string) *precheckv1.DispatchHookRequest {
		return &precheckv1.DispatchHookRequest{
			SourcePackageYaml: hookPackage(service, url), TargetPackageYaml: targetPackage,
			Namespace: namespace, Secrets: secrets, ServiceName: "arcturus", Supervisor: "supervisor-vc1",
			SourceVersion: "1.0.0", TargetVersion: "2.0.0",
		}
	}

	one, err := client.DispatchHook(ctx, req("ucs", "ucs/v2/compatibility"))
	require.NoError(t, err)
	res := one.GetResult()
	require.True(t, res.GetConfigured())
	require.False(t, res.GetBlocked(), res.GetFailure())
	require.Equal(t, "https://"+hookHost+":443/ucs/v2/compatibility", res.GetEndpoint())
	require.Equal(t, int32(200), res.GetHttpStatus())
	require.Len(t, res.GetResults(), 1)
	require.Equal(t, "WARNING", res.GetResults()[0].GetSeverity())
	require.Equal(t, "HOOK", res.GetResults()[0].GetKind())
	require.Equal(t, "Custom resource X will be deprecated in the target version.", res.GetResults()[0].GetMessage())

	many, err := client.DispatchHooks(ctx, &precheckv1.DispatchHooksRequest{Requests: []*precheckv1.DispatchHookRequest{
		req("ucs", "blocked"), req("strict", "check"), req("ucs", "check"),
	}})
	require.NoError(t, err)
	require.Len(t, many.GetResults(), 3)
	blocked := many.GetResults()[0]
	require.True(t, blocked.GetBlocked())
	require.Empty(t, blocked.GetFailure())
	require.Equal(t, "Migration prerequisite missing: backing PVC is not bound.", blocked.GetResults()[0].GetMessage())
	rejected := many.GetResults()[1]
	require.True(t, rejected.GetBlocked())
	require.Equal(t, int32(401), rejected.GetHttpStatus())
	require.Equal(t, "hook https://"+strictHost+":443/check answered HTTP 401 Unauthorized: unauthenticated: the bearer token is not the one this hook accepts\n", rejected.GetFailure())
	require.False(t, many.GetResults()[2].GetBlocked())

	report, err := client.RunDynamicPrechecks(ctx, &precheckv1.RunDynamicPrechecksRequest{
		Resources: []*commonv1.Resource{{ApiVersion: "services.vcfa.broadcom.com/v2", Kind: "UserInterfacePlugin", Name: "arcturus-ui", Yaml: []byte(`apiVersion: services.vcfa.broadcom.com/v2
kind: UserInterfacePlugin
metadata:
  labels:
    services.vcfa.broadcom.com/name: arcturus-ui
spec:
  image: ` + pluginImage + `
  enabled: true
`)}},
		Staged: []*precheckv1.StagedResource{{Index: 0, Target: "vcfa", Reachable: true}},
		Bundle: &precheckv1.BundleFacts{PluginManifests: map[string][]byte{pluginImage: []byte(`{"urn":"vmware:vcloud:plugin:arcturus-ui","name":"Arcturus","version":"2.11.1","vendor":"Example","containerVersion":"9.1.0","module":"ArcturusModule","route":"arcturus","vcfaVersion":">=9.2"}`)}},
		Platform: &precheckv1.PlatformFacts{
			VcfaVersion: "9.1",
			Targets:     []*precheckv1.TargetFacts{{Name: "vcfa", SupportedApiVersions: []string{"services.vcfa.broadcom.com/v2"}}},
		},
	})
	require.NoError(t, err)
	rep := report.GetReport()
	require.Equal(t, "Failed", rep.GetPreCheckStatus())
	require.Equal(t, "UserInterfacePlugin", rep.GetResourceChecks()[0].GetType())
	require.Equal(t, "arcturus-ui", rep.GetResourceChecks()[0].GetName())
	require.Equal(t, "Failed", rep.GetResourceChecks()[0].GetStatus())
	var compat *commonv1.Check
	for _, c := range rep.GetResourceChecks()[0].GetChecks() {
		if c.GetName() == "PluginCompatibility" {
			compat = c
		}
	}
	require.Equal(t, "Plugin requires VCF Automation 9.2+, current version: 9.1", compat.GetMessage())
	require.Equal(t, "Failed", compat.GetStatus())

	_, err = client.RunDynamicPrechecks(ctx, &precheckv1.RunDynamicPrechecksRequest{
		Resources: []*commonv1.Resource{{Kind: "GlobalRole", Yaml: []byte("kind: GlobalRole\n")}},
	})
	require.Equal(t, codes.InvalidArgument, status.Code(err))
	require.Contains(t, status.Convert(err).Message(), "resources[0] (GlobalRole ) was not staged")
}

// TestDispatchHookTimeoutConfigured: --hook-timeout bounds a hook that
// never answers.
func TestDispatchHookTimeoutConfigured(t *testing.T) {
	ca, err := testcerts.NewCA("arcturus CA")
	require.NoError(t, err)
	addr := startSampleHook(t, ca, hookHost, samplehook.Config{Answers: samplehook.File{Answer: samplehook.Answer{Hang: true}}})
	client := startService(t, app.Config{HookTimeout: 200 * time.Millisecond, Resolve: []string{hookHost + "=" + addr}})
	res, err := client.DispatchHook(context.Background(), &precheckv1.DispatchHookRequest{
		SourcePackageYaml: hookPackage("ucs", "check"), TargetPackageYaml: targetPackage, Namespace: namespace,
		Secrets: map[string]*precheckv1.SecretData{caSecret: {Data: map[string][]byte{"ca.crt": ca.PEM}}},
	})
	require.NoError(t, err)
	require.True(t, res.GetResult().GetBlocked())
	require.Equal(t, "endpoint timed out: https://"+hookHost+":443/check did not answer within 200ms", res.GetResult().GetFailure())
}

func TestConfigFlagsAndEnvironment(t *testing.T) {
	t.Setenv("VCFSM_HOOK_TIMEOUT", "5s")
	t.Setenv("VCFSM_HOOK_CONCURRENCY", "17")
	t.Setenv("VCFSM_RESOLVE", "a.ns.svc.cluster.local=127.0.0.1:1, b.ns.svc.cluster.local=10.0.0.2")
	var cfg app.Config
	fs := flag.NewFlagSet("precheck", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	require.NoError(t, cli.Parse(fs, []string{"--hook-concurrency", "9", "--resolve", "c.ns.svc.cluster.local=samplehook:8443", "--hook-token", "tok"}))
	require.Equal(t, 5*time.Second, cfg.HookTimeout, "environment default")
	require.Equal(t, 9, cfg.HookConcurrency, "the flag wins")
	require.Equal(t, int64(1<<20), cfg.HookMaxResponseBytes)
	require.Equal(t, "tok", cfg.HookToken)
	require.Equal(t, []string{"c.ns.svc.cluster.local=samplehook:8443"}, cfg.Resolve, "the command line wins over the environment")
	_, err := app.New(context.Background(), cfg, logging.Discard())
	require.NoError(t, err)
}

func TestConfigErrors(t *testing.T) {
	t.Run("bad environment value", func(t *testing.T) {
		t.Setenv("VCFSM_HOOK_TIMEOUT", "soon")
		var cfg app.Config
		fs := flag.NewFlagSet("precheck", flag.ContinueOnError)
		cfg.RegisterFlags(fs)
		err := cli.Parse(fs, nil)
		require.ErrorContains(t, err, `"VCFSM_HOOK_TIMEOUT"`)
	})
	t.Run("bad resolve entry", func(t *testing.T) {
		_, err := app.New(context.Background(), app.Config{Resolve: []string{"no-equals-sign"}}, logging.Discard())
		require.ErrorContains(t, err, `--resolve: resolve entry "no-equals-sign": want HOST=ADDR`)
	})
	t.Run("negative timeout", func(t *testing.T) {
		_, err := app.New(context.Background(), app.Config{HookTimeout: -time.Second}, logging.Discard())
		require.ErrorContains(t, err, "must not be negative")
	})
}
