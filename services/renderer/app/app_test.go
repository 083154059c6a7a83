package app_test

import (
	"context"
	"encoding/base64"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vcfsm/vcfsm/services/renderer/internal/rendertest"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/renderer/app"
)

// TestMain lets the test binary serve as the renderer's worker executable.
func TestMain(m *testing.M) {
	app.MaybeRunWorker()
	os.Exit(m.Run())
}

const testdata = "../testdata"

// startService runs the renderer service on 127.0.0.1 and returns a client;
// everything stops when the test ends.
func startService(t testing.TB, cfg app.Config) rendererv1.RendererServiceClient {
	t.Helper()
	svc, err := app.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	srv := grpcx.NewServer(grpcx.ServerConfig{})
	svc.Register(srv)
	srv.MarkServing()
	lis, err := grpcx.Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis, time.Second) }()
	conn, err := grpcx.Dial(lis.Addr().String(), "")
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, conn.Close())
		cancel()
		require.NoError(t, <-served)
		require.NoError(t, svc.Close())
	})
	return rendererv1.NewRendererServiceClient(conn)
}

func testConfig() app.Config {
	cfg := app.DefaultConfig()
	cfg.Workers = 2
	cfg.Timeout = 20 * time.Second
	return cfg
}

func loadBundle(t testing.TB, name string) *commonv1.Bundle {
	t.Helper()
	return rendertest.LoadBundle(t, filepath.Join(testdata, "bundles", name), "sha256:app-test-"+name)
}

func readTestdata(t testing.TB, parts ...string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(append([]string{testdata}, parts...)...))
	require.NoError(t, err)
	return data
}

func inventory(t testing.TB) *commonv1.Inventory {
	t.Helper()
	inv := &commonv1.Inventory{}
	require.NoError(t, protojson.Unmarshal(readTestdata(t, "inventories", "multi-region.json"), inv))
	return inv
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestRenderEndpointsThroughGRPC(t *testing.T) {
	client := startService(t, testConfig())
	ctx := context.Background()
	layers := &rendererv1.ValueLayers{Inventory: inventory(t)}

	ev, err := client.RenderEffectiveValues(ctx, &rendererv1.RenderEffectiveValuesRequest{Bundle: loadBundle(t, "arcturus"), Values: layers, Provenance: true})
	require.NoError(t, err)
	require.Equal(t, string(readTestdata(t, "golden", "arcturus-multi-region", "effective.yml")), string(ev.GetYaml()))
	require.NotEmpty(t, ev.GetProvenance())

	// The bundle is cached now: its digest is enough.
	cached := &commonv1.Bundle{Digest: "sha256:app-test-arcturus"}
	evx, err := client.RenderEffectiveValues(ctx, &rendererv1.RenderEffectiveValuesRequest{Bundle: cached, Values: layers, Expanded: true})
	require.NoError(t, err)
	require.Equal(t, string(readTestdata(t, "golden", "arcturus-multi-region", "effective-expanded.yml")), string(evx.GetYaml()))
	require.Empty(t, evx.GetProvenance(), "provenance only when asked")

	res, err := client.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: cached, Values: layers})
	require.NoError(t, err)
	require.Equal(t, string(readTestdata(t, "golden", "arcturus-multi-region", "resources.yml")), string(res.GetYaml()))
	require.Len(t, res.GetResources(), 20)
	require.Equal(t, string(evx.GetYaml()), string(res.GetEffectiveValuesYaml()))

	ag, err := client.RenderAccessGrants(ctx, &rendererv1.RenderAccessGrantsRequest{Bundle: cached, Values: layers})
	require.NoError(t, err)
	require.Equal(t, []any{"Arcturus Administrator"}, ag.GetAccessGrants().AsMap()["VCF Automation"].(map[string]any)["GlobalRole"])

	values, err := structpb.NewStruct(map[string]any{"new_url": "https://10.0.1.100", "admin_password": "Arcturus12345"})
	require.NoError(t, err)
	applyReq := &rendererv1.ApplyOverlayRequest{
		RuntimeSpecYaml: readTestdata(t, "overlays", "basic-structure", "runtime-spec.yml"),
		Overlay:         string(readTestdata(t, "overlays", "basic-structure", "overlay.yml")),
		Values:          values,
		OverlayReady:    true,
		OverlayName:     "install.us-west-1",
	}
	applied, err := client.ApplyOverlay(ctx, applyReq)
	require.NoError(t, err)
	require.Equal(t, "Healthy", applied.GetStatus())
	require.True(t, applied.GetApplied())
	require.Equal(t, string(readTestdata(t, "golden", "overlays", "basic-structure.yml")), string(applied.GetRuntimeSpecYaml()))

	applyReq.OverlayReady = false
	waiting, err := client.ApplyOverlay(ctx, applyReq)
	require.NoError(t, err)
	require.Equal(t, "Busy", waiting.GetStatus())
	require.Contains(t, waiting.GetMessage(), "Waiting for overlay: Overlay secret 'install.us-west-1' not found or not ready (mode: eager)")
}

// Every error case of the render endpoints, as a gRPC caller sees it.
func TestRenderErrorsThroughGRPC(t *testing.T) {
	client := startService(t, testConfig())
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		call    func() error
		code    codes.Code
		message string
		// field is the first BadRequest field violation, when expected.
		field string
	}{
		{
			name: "no bundle",
			call: func() error {
				_, err := client.RenderEffectiveValues(ctx, &rendererv1.RenderEffectiveValuesRequest{})
				return err
			},
			code: codes.InvalidArgument, message: "bundle: required: a bundle digest and its files", field: "bundle",
		},
		{
			name: "unknown digest without files",
			call: func() error {
				_, err := client.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: &commonv1.Bundle{Digest: "sha256:never-seen"}})
				return err
			},
			code:    codes.FailedPrecondition,
			message: "bundle: bundle sha256:never-seen is not cached by the renderer: resend the request with the bundle's files",
		},
		{
			name: "user overwrite is not base64",
			call: func() error {
				_, err := client.RenderEffectiveValues(ctx, &rendererv1.RenderEffectiveValuesRequest{Bundle: loadBundle(t, "arcturus"), Values: &rendererv1.ValueLayers{UserOverwrite: "@@"}})
				return err
			},
			code:    codes.InvalidArgument,
			message: "userOverwrite: invalid base64 (layers are base64-encoded YAML, as in api.md): illegal base64 data at input byte 0",
			field:   "userOverwrite",
		},
		{
			name: "schema violation",
			call: func() error {
				_, err := client.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, "arcturus"), Values: &rendererv1.ValueLayers{
					Inventory:     inventory(t),
					UserOverwrite: b64("regions:\n- name: us-west-1\n  hostSupervisor:\n    configuration:\n      port: eighty\n"),
				}})
				return err
			},
			code:    codes.InvalidArgument,
			message: "valuesSchema: regions[0].hostSupervisor.configuration.port: expected integer, got string",
			field:   "valuesSchema.regions[0].hostSupervisor.configuration.port",
		},
		{
			name: "forbidden kind",
			call: func() error {
				b := &commonv1.Bundle{Digest: "sha256:deployment", Files: []*commonv1.BundleFile{
					{Path: "package.yml", Content: []byte("kind: Package\n")},
					{Path: "config/deployment.yml", Content: []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n")},
				}}
				_, err := client.RenderAccessGrants(ctx, &rendererv1.RenderAccessGrantsRequest{Bundle: b})
				return err
			},
			code:    codes.InvalidArgument,
			message: `config: documents[0]: kind "Deployment" (apiVersion "apps/v1") is not allowed`,
			field:   "config.documents[0]",
		},
		{
			name: "bad overlay mode",
			call: func() error {
				_, err := client.ApplyOverlay(ctx, &rendererv1.ApplyOverlayRequest{RuntimeSpecYaml: []byte("a: 1\n"), Mode: "never", OverlayName: "x"})
				return err
			},
			code: codes.InvalidArgument, message: `request: mode: "never" is not an overlay-apply mode: use eager or lazy`, field: "request.mode",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := status.Convert(tc.call())
			require.Equal(t, tc.code, st.Code(), st.Message())
			require.Contains(t, st.Message(), tc.message)
			if tc.field == "" {
				return
			}
			require.NotEmpty(t, st.Details())
			br, ok := st.Details()[0].(*errdetails.BadRequest)
			require.True(t, ok)
			require.Equal(t, tc.field, br.GetFieldViolations()[0].GetField())
		})
	}
}

func TestBoundsThroughGRPC(t *testing.T) {
	cfg := testConfig()
	cfg.Workers = 1
	cfg.Timeout = time.Second
	cfg.MemoryLimit = 128 << 20
	client := startService(t, cfg)
	ctx := context.Background()

	start := time.Now()
	_, err := client.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, "looping")})
	st := status.Convert(err)
	require.Equal(t, codes.DeadlineExceeded, st.Code(), st.Message())
	require.Contains(t, st.Message(), "ran longer than 1s (--render-timeout) and was stopped")
	require.Less(t, time.Since(start), 6*time.Second)

	// The memory bound on a service whose time bound cannot come first:
	// on a loaded machine the hog may take more than a second to reach
	// its 128 MiB.
	cfg.Timeout = time.Minute
	hogged := startService(t, cfg)
	_, err = hogged.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, "memory-hog")})
	st = status.Convert(err)
	require.Equal(t, codes.ResourceExhausted, st.Code(), st.Message())
	require.Contains(t, st.Message(), "more than the 128 MiB allowed (--render-memory-limit)")

	// The services keep serving.
	_, err = hogged.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, "arcturus"), Values: &rendererv1.ValueLayers{Inventory: inventory(t)}})
	require.NoError(t, err)
	resp, err := client.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, "arcturus"), Values: &rendererv1.ValueLayers{Inventory: inventory(t)}})
	require.NoError(t, err)
	require.Len(t, resp.GetResources(), 20)
}

func TestInProcessIsolation(t *testing.T) {
	cfg := testConfig()
	cfg.Isolation = app.IsolationInProcess
	client := startService(t, cfg)
	resp, err := client.RenderResources(context.Background(), &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, "arcturus"), Values: &rendererv1.ValueLayers{Inventory: inventory(t)}})
	require.NoError(t, err)
	require.Equal(t, string(readTestdata(t, "golden", "arcturus-multi-region", "resources.yml")), string(resp.GetYaml()))
}

func TestFlags(t *testing.T) {
	var cfg app.Config
	fs := flag.NewFlagSet("renderer", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	require.Equal(t, app.DefaultConfig(), cfg)
	require.NoError(t, fs.Parse([]string{
		"--render-isolation=in-process", "--render-workers=3", "--render-timeout=2s",
		"--render-memory-limit=256MiB", "--render-cache-size=5",
	}))
	require.Equal(t, app.IsolationInProcess, cfg.Isolation)
	require.Equal(t, 3, cfg.Workers)
	require.Equal(t, 2*time.Second, cfg.Timeout)
	require.Equal(t, app.ByteSize(256<<20), cfg.MemoryLimit)
	require.Equal(t, 5, cfg.CacheSize)

	require.Error(t, fs.Parse([]string{"--render-memory-limit=lots"}))
}

func TestFlagsReadTheEnvironment(t *testing.T) {
	t.Setenv("VCFSM_RENDER_TIMEOUT", "3s")
	t.Setenv("VCFSM_RENDER_MEMORY_LIMIT", "1GiB")
	var cfg app.Config
	fs := flag.NewFlagSet("renderer", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	require.NoError(t, cli.Parse(fs, []string{"--render-timeout=4s"}))
	require.Equal(t, app.ByteSize(1<<30), cfg.MemoryLimit, "from the environment")
	require.Equal(t, 4*time.Second, cfg.Timeout, "the command line wins")
}

func TestBadConfigurationIsReported(t *testing.T) {
	t.Setenv("VCFSM_RENDER_WORKERS", "many")
	var cfg app.Config
	fs := flag.NewFlagSet("renderer", flag.ContinueOnError)
	cfg.RegisterFlags(fs)
	err := cli.Parse(fs, nil)
	require.ErrorContains(t, err, `"VCFSM_RENDER_WORKERS"`)

	bad := app.DefaultConfig()
	bad.Isolation = "container"
	_, err = app.New(context.Background(), bad, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, `--render-isolation: "container" is neither process nor in-process`)

	small := app.DefaultConfig()
	small.MemoryLimit = 1 << 20
	_, err = app.New(context.Background(), small, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "at least 32 MiB")
}

func TestZeroIsolationIsTheSandbox(t *testing.T) {
	// Only the time bound is set: the zero isolation must be the worker
	// pool, the only mode that can stop a looping template.
	client := startService(t, app.Config{Workers: 1, Timeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := client.RenderResources(ctx, &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, "looping")})
	st := status.Convert(err)
	require.Equal(t, codes.DeadlineExceeded, st.Code())
	require.Contains(t, st.Message(), "(--render-timeout)", "the sandbox, not the caller's deadline, stopped the render")
}
