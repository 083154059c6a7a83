package render

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

// overlayRequest loads testdata/overlays/<dir>: a runtime spec, an Overlay
// template and its resolved values.
func overlayRequest(t *testing.T, dir string) *rendererv1.ApplyOverlayRequest {
	t.Helper()
	var values map[string]any
	require.NoError(t, json.Unmarshal(readTestdata(t, "overlays", dir, "values.json"), &values))
	s, err := structpb.NewStruct(values)
	require.NoError(t, err)
	return &rendererv1.ApplyOverlayRequest{
		RuntimeSpecYaml: readTestdata(t, "overlays", dir, "runtime-spec.yml"),
		Overlay:         string(readTestdata(t, "overlays", dir, "overlay.yml")),
		Values:          s,
		OverlayReady:    true,
		OverlayName:     "publish.us-west-1",
	}
}

// The examples of runtime-spec.md and overlay.md, each applied to a runtime
// spec it fits; wrong-structure is the troubleshooting section's template
// written against the authored spec.
func TestApplyOverlayDocExamples(t *testing.T) {
	for _, tc := range []struct {
		dir     string
		status  string
		applied bool
		// message is the whole message, or its prefix for failures.
		message string
	}{
		{dir: "basic-structure", status: StatusHealthy, applied: true, message: "Overlay applied successfully"},
		{dir: "inject-ip", status: StatusHealthy, applied: true, message: "Overlay applied successfully"},
		{dir: "external-ip", status: StatusHealthy, applied: true, message: "Overlay applied successfully"},
		{dir: "certificate", status: StatusHealthy, applied: true, message: "Overlay applied successfully"},
		{dir: "overlay-template", status: StatusHealthy, applied: true, message: "Overlay applied successfully"},
		{dir: "wrong-structure", status: StatusUnhealthy, message: "Failed to apply overlay: ytt transformation failed: "},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			resp, err := ApplyOverlay(overlayRequest(t, tc.dir))
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.GetStatus())
			require.Equal(t, tc.applied, resp.GetApplied())
			if tc.applied {
				require.Equal(t, tc.message, resp.GetMessage())
				golden(t, filepath.Join("overlays", tc.dir+".yml"), resp.GetRuntimeSpecYaml())
				return
			}
			require.True(t, strings.HasPrefix(resp.GetMessage(), tc.message), resp.GetMessage())
			require.Contains(t, resp.GetMessage(), "Expected number of matched nodes to be 1, but was 0")
			require.Empty(t, resp.GetRuntimeSpecYaml(), "a failed overlay leaves nothing to deploy")
		})
	}
}

func TestApplyOverlayModes(t *testing.T) {
	base := readTestdata(t, "overlays", "basic-structure", "runtime-spec.yml")
	for _, tc := range []struct {
		name     string
		mode     string
		ready    bool
		status   string
		message  string
		applied  bool
		wantBase bool
	}{
		{
			name: "eager, not ready: wait", mode: ModeEager, status: StatusBusy,
			message: "Waiting for overlay: Overlay secret 'publish.us-west-1' not found or not ready (mode: eager). The Overlay CR with label 'services.vcfa.broadcom.com/overlay=publish.us-west-1' must exist and have status=Healthy. Will retry in 10s.",
		},
		{
			name: "default mode is eager", mode: "", status: StatusBusy,
			message: WaitingMessage("publish.us-west-1"),
		},
		{name: "lazy, not ready: base configuration", mode: ModeLazy, status: StatusHealthy, message: "Deployed with base configuration", wantBase: true},
		{name: "lazy, ready: applied", mode: ModeLazy, ready: true, status: StatusHealthy, message: "Overlay applied successfully", applied: true},
		{name: "eager, ready: applied", mode: ModeEager, ready: true, status: StatusHealthy, message: "Overlay applied successfully", applied: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := overlayRequest(t, "basic-structure")
			req.Mode = tc.mode
			req.OverlayReady = tc.ready
			resp, err := ApplyOverlay(req)
			require.NoError(t, err)
			require.Equal(t, tc.status, resp.GetStatus())
			require.Equal(t, tc.message, resp.GetMessage())
			require.Equal(t, tc.applied, resp.GetApplied())
			switch {
			case tc.wantBase:
				require.Equal(t, string(base), string(resp.GetRuntimeSpecYaml()))
			case tc.applied:
				require.Contains(t, string(resp.GetRuntimeSpecYaml()), "externalURL: https://10.0.1.100")
			default:
				require.Empty(t, resp.GetRuntimeSpecYaml())
			}
		})
	}
}

func TestApplyOverlayRejectsBadRequests(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*rendererv1.ApplyOverlayRequest)
		want   string
	}{
		{"unknown mode", func(r *rendererv1.ApplyOverlayRequest) { r.Mode = "sometimes" }, `request: mode: "sometimes" is not an overlay-apply mode: use eager or lazy`},
		{"no overlay name", func(r *rendererv1.ApplyOverlayRequest) { r.OverlayName = "" }, "request: overlayName: required"},
		{"spec is not YAML", func(r *rendererv1.ApplyOverlayRequest) { r.RuntimeSpecYaml = []byte("a: [") }, "runtimeSpec: invalid YAML"},
		{"spec has two documents", func(r *rendererv1.ApplyOverlayRequest) { r.RuntimeSpecYaml = []byte("a: 1\n---\nb: 2\n") }, "runtimeSpec: expected one YAML document, got 2"},
		{"spec is empty", func(r *rendererv1.ApplyOverlayRequest) { r.RuntimeSpecYaml = nil }, "runtimeSpec: expected one YAML document, got 0"},
		{"spec is a list", func(r *rendererv1.ApplyOverlayRequest) { r.RuntimeSpecYaml = []byte("- a\n") }, "runtimeSpec: expected a map, got array"},
		{"ready without template", func(r *rendererv1.ApplyOverlayRequest) { r.Overlay = " \n" }, "request: overlay: required when the overlay is ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := overlayRequest(t, "basic-structure")
			tc.change(req)
			_, err := ApplyOverlay(req)
			require.ErrorIs(t, err, ErrInvalidInput)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestApplyOverlayFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		template string
		want     string
	}{
		{"template does not parse", "values: [\n", "Failed to apply overlay: ytt transformation failed: overlay.yml: yaml: line 2"},
		{"starlark error", "#@ load(\"@ytt:overlay\", \"overlay\")\n#@overlay/match by=overlay.all\n---\nvalues: #@ data.values.missing\n", "struct has no .missing field or method"},
		{"extra document", "---\nextra: true\n", "the overlay left 2 documents; it must transform the one runtime spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := overlayRequest(t, "basic-structure")
			req.Overlay = tc.template
			resp, err := ApplyOverlay(req)
			require.NoError(t, err, "a failing template is the target's status, not an error of the call")
			require.Equal(t, StatusUnhealthy, resp.GetStatus())
			require.False(t, resp.GetApplied())
			require.True(t, strings.HasPrefix(resp.GetMessage(), "Failed to apply overlay: ytt transformation failed: "), resp.GetMessage())
			require.Contains(t, resp.GetMessage(), tc.want)
		})
	}
}

func TestApplyOverlayValueTypes(t *testing.T) {
	// Struct numbers are doubles; whole ones reach ytt as integers.
	req := overlayRequest(t, "basic-structure")
	req.Overlay = "#@ load(\"@ytt:overlay\", \"overlay\")\n#@overlay/match by=overlay.all\n---\n#@overlay/match missing_ok=True\nport: #@ data.values.port + 1\n#@overlay/match missing_ok=True\nratio: #@ data.values.ratio\n#@overlay/match missing_ok=True\nflags: #@ data.values.flags\n"
	values, err := structpb.NewStruct(map[string]any{"port": 5000, "ratio": 0.5, "flags": map[string]any{"b": true, "a": nil}})
	require.NoError(t, err)
	req.Values = values
	resp, err := ApplyOverlay(req)
	require.NoError(t, err)
	require.Equal(t, StatusHealthy, resp.GetStatus(), resp.GetMessage())
	out := string(resp.GetRuntimeSpecYaml())
	require.Contains(t, out, "port: 5001\n")
	require.Contains(t, out, "ratio: 0.5\n")
	require.Contains(t, out, "flags:\n  a: null\n  b: true\n")
}

func TestWithDataModule(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{
			in:   "#@ load(\"@ytt:overlay\", \"overlay\")\n---\na: 1\n",
			want: "#@ load(\"@ytt:data\", \"data\"); load(\"@ytt:overlay\", \"overlay\")\n---\na: 1\n",
		},
		{
			in:   "---\na: 1\n",
			want: "#@ load(\"@ytt:data\", \"data\")\n---\na: 1\n",
		},
		{
			in:   "#@ load(\"@ytt:data\", \"data\")\n---\na: 1\n",
			want: "#@ load(\"@ytt:data\", \"data\")\n---\na: 1\n",
		},
		{
			in:   "#@ load(\"@ytt:overlay\", \"overlay\")\n#@ load( \"@ytt:data\", \"d\")\n",
			want: "#@ load(\"@ytt:overlay\", \"overlay\")\n#@ load( \"@ytt:data\", \"d\")\n",
		},
	} {
		require.Equal(t, tc.want, withDataModule(tc.in))
	}
}
