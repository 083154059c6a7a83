package render

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"carvel.dev/ytt/pkg/yamlmeta"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

// The conformance tests run the same inputs through the renderer and
// through the ytt CLI built from the module version the renderer links
// (the `tool` line of go.mod), and require equal output.

var yttCLI struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if yttCLI.dir != "" {
		_ = os.RemoveAll(yttCLI.dir)
	}
	os.Exit(code)
}

// buildYTT builds the ytt CLI once per test run.
func buildYTT(t *testing.T) string {
	t.Helper()
	yttCLI.once.Do(func() {
		dir, err := os.MkdirTemp("", "renderer-ytt-cli-")
		if err != nil {
			yttCLI.err = err
			return
		}
		yttCLI.dir = dir
		yttCLI.path = filepath.Join(dir, "ytt")
		// go test puts its own go command first on the PATH.
		out, err := exec.Command("go", "build", "-o", yttCLI.path, "carvel.dev/ytt/cmd/ytt").CombinedOutput()
		if err != nil {
			yttCLI.err = err
			yttCLI.path = string(out)
		}
	})
	require.NoError(t, yttCLI.err, "build the ytt CLI: %s", yttCLI.path)
	return yttCLI.path
}

// runYTT runs the CLI in dir and returns what it prints.
func runYTT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(buildYTT(t), args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "ytt %s: %s", strings.Join(args, " "), stderr.String())
	return stdout.String()
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func bundleDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join(testdata, "bundles", name))
	require.NoError(t, err)
	return dir
}

// The example bundle with the values files its authors test it with:
// `ytt -f config/ --data-values-file test-*.yml`.
func TestConformanceExampleBundleWithItsTestValues(t *testing.T) {
	e := newTestEngine(t)
	for _, values := range []string{"test-basic.yml", "test-multi-region.yml"} {
		t.Run(values, func(t *testing.T) {
			valuesPath, err := filepath.Abs(filepath.Join(testdata, "values-myservice", values))
			require.NoError(t, err)
			want := runYTT(t, t.TempDir(), "-f", filepath.Join(bundleDir(t, "myservice-example"), "config"), "--data-values-file", valuesPath)

			resp, err := e.RenderResources(context.Background(), &rendererv1.RenderResourcesRequest{
				Bundle: loadBundle(t, "myservice-example"),
				Values: &rendererv1.ValueLayers{UserOverwrite: b64(string(readTestdata(t, "values-myservice", values)))},
			})
			require.NoError(t, err)
			require.Equal(t, want, string(resp.GetYaml()))
		})
	}
}

const apiMdOverwrite = `regions:
  - name: us-west-1
    hostSupervisor:
      name: supervisor-vc1
      configuration:
        persistence:
          persistentVolumeClaim:
            registry:
              size: 20Gi
`

// The same merge, written as the ytt overlay the renderer builds for it.
const apiMdOverwriteAsOverlay = `#@ load("@ytt:overlay", "overlay")
#@overlay/match by=overlay.all
---
regions:
#@overlay/match by=overlay.map_key("name"), missing_ok=True
- name: us-west-1
  hostSupervisor:
    name: supervisor-vc1
    configuration:
      persistence:
        persistentVolumeClaim:
          registry:
            size: 20Gi
`

// dropSystem leaves __system out of --data-values-inspect, as the
// renderer's effective values do.
const dropSystem = `#@data/values
---
#@overlay/match missing_ok=True
#@overlay/remove
__system:
`

// The whole pipeline, stage by stage: each CLI stage reads the previous CLI
// stage's output; only the schema defaults (not a ytt step) come from the
// renderer.
func TestConformancePipeline(t *testing.T) {
	for _, tc := range []struct {
		name, bundle, inventory string
		// user is a plain overwrite and its ytt overlay equivalent.
		user, userOverlay string
	}{
		{name: "arcturus", bundle: "arcturus", inventory: "multi-region.json"},
		{name: "myservice-example", bundle: "myservice-example", inventory: "multi-region.json"},
		{name: "api-example", bundle: "api-example", inventory: "api-example.json", user: apiMdOverwrite, userOverlay: apiMdOverwriteAsOverlay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root := bundleDir(t, tc.bundle)
			inv := loadInventory(t, tc.inventory)
			layers := &rendererv1.ValueLayers{Inventory: inv, UserOverwrite: b64(tc.user)}
			b, err := newTestEngine(t).Bundle(loadBundle(t, tc.bundle))
			require.NoError(t, err)
			st, err := runValues(b, layers)
			require.NoError(t, err)

			// Transpiler, with the inventory as protojson gives it.
			transpilerArgs := []string{"-f", filepath.Join(root, ".values", "transpiler.yml")}
			helpers, err := filepath.Glob(filepath.Join(root, ".values", "*.star"))
			require.NoError(t, err)
			for _, h := range helpers {
				transpilerArgs = append(transpilerArgs, "-f", h)
			}
			invPath := writeFile(t, dir, "inventory.json", transpilerData(t, inv))
			transpiled := runYTT(t, dir, append(transpilerArgs, "--data-values-file", invPath)...)
			requireYAML(t, transpiled, st.transpiled)
			alone, err := b.Transpile(inv)
			require.NoError(t, err)
			require.Equal(t, transpiled, string(alone))

			// User overwrite.
			user := transpiled
			if tc.user != "" {
				base := writeFile(t, dir, "vendor.yml", []byte(transpiled))
				overlay := writeFile(t, dir, "user-overlay.yml", []byte(tc.userOverlay))
				user = runYTT(t, dir, "-f", base, "-f", overlay)
			}
			requireYAML(t, user, st.user)

			// config/'s data values.
			userPath := writeFile(t, dir, "user.yml", []byte(user))
			drop := writeFile(t, dir, "drop-system.yml", []byte(dropSystem))
			effectiveValues := runYTT(t, dir, "-f", filepath.Join(root, "config"), "-f", drop, "--data-values-file", userPath, "--data-values-inspect")
			requireYAML(t, effectiveValues, st.effective)

			// config/ rendered with the expanded values.
			expanded, err := yamlText(st.expanded)
			require.NoError(t, err)
			expandedPath := writeFile(t, dir, "expanded.yml", expanded)
			resources := runYTT(t, dir, "-f", filepath.Join(root, "config"), "--data-values-file", expandedPath)
			resp, err := newTestEngine(t).RenderResources(context.Background(), &rendererv1.RenderResourcesRequest{Bundle: loadBundle(t, tc.bundle), Values: layers})
			require.NoError(t, err)
			require.Equal(t, resources, string(resp.GetYaml()))
		})
	}
}

// transpilerData is the transpiler's data values built independently of the
// renderer: protojson's JSON, its fields at the root and whole under
// "inventory".
func transpilerData(t *testing.T, inv *commonv1.Inventory) []byte {
	t.Helper()
	data, err := protojson.Marshal(inv)
	require.NoError(t, err)
	var fields map[string]any
	require.NoError(t, json.Unmarshal(data, &fields))
	if _, ok := fields["regions"]; !ok {
		fields["regions"] = []any{}
	}
	out := map[string]any{"inventory": fields}
	for k, v := range fields {
		out[k] = v
	}
	data, err = json.Marshal(out)
	require.NoError(t, err)
	return data
}

func requireYAML(t *testing.T, want string, got *yamlmeta.Document) {
	t.Helper()
	text, err := yamlText(got)
	require.NoError(t, err)
	require.Equal(t, want, string(text))
}

func TestConformanceLayerOverlay(t *testing.T) {
	// A provider's scoping filter: `ytt -f inventory.yml -f platform.yml`.
	const filter = `#@ load("@ytt:overlay", "overlay")
#@overlay/match by=overlay.all
---
regions:
#@overlay/match by=lambda i, left, right: left["name"] != "eu-central-1", expects="0+"
#@overlay/remove
-
`
	dir := t.TempDir()
	inv := loadInventory(t, "multi-region.json")
	data, err := protojson.Marshal(inv)
	require.NoError(t, err)
	want := runYTT(t, dir, "-f", writeFile(t, dir, "inventory.yml", data), "-f", writeFile(t, dir, "platform.yml", []byte(filter)))

	b, err := newTestEngine(t).Bundle(passthroughBundle())
	require.NoError(t, err)
	st, err := runValues(b, &rendererv1.ValueLayers{Inventory: inv, PlatformOverlay: b64(filter)})
	require.NoError(t, err)
	requireYAML(t, want, st.platform)
	require.Contains(t, want, "eu-central-1")
	require.NotContains(t, want, "us-west-1")
}

// runtime-spec.md's local reproduction: `ytt -f base.yml -f overlay.yml`
// with the values as data values.
func TestConformanceApplyOverlay(t *testing.T) {
	for _, name := range []string{"basic-structure", "inject-ip", "external-ip", "certificate", "overlay-template", "wrong-structure"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			req := overlayRequest(t, name)
			base := writeFile(t, dir, runtimeSpecFile, req.GetRuntimeSpecYaml())
			overlay := writeFile(t, dir, overlayFile, []byte(withDataModule(req.GetOverlay())))
			values := writeFile(t, dir, "values.json", readTestdata(t, "overlays", name, "values.json"))
			cmd := exec.Command(buildYTT(t), "-f", base, "--file-mark", runtimeSpecFile+":type=yaml-plain", "-f", overlay, "--data-values-file", values)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cliErr := cmd.Run()

			resp, err := ApplyOverlay(req)
			require.NoError(t, err)
			if cliErr != nil {
				require.Equal(t, StatusUnhealthy, resp.GetStatus())
				require.Equal(t, FailedMessage(strings.TrimSpace(strings.TrimPrefix(stderr.String(), "ytt: Error:"))), resp.GetMessage())
				return
			}
			require.Equal(t, StatusHealthy, resp.GetStatus(), resp.GetMessage())
			require.Equal(t, stdout.String(), string(resp.GetRuntimeSpecYaml()))
		})
	}
}
