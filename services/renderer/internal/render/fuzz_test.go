package render

import (
	"errors"
	"path"
	"strings"
	"testing"

	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

// Fuzz targets run their seeds with `go test`; `go test -fuzz` explores
// further. They cover the inputs a caller controls directly. ytt templates
// are left out on purpose: arbitrary Starlark may loop, which is what the
// sandbox is for.

func FuzzPlainLayer(f *testing.F) {
	for _, seed := range []string{
		"",
		"regions:\n- name: us-west-1\n  tier: gold\n",
		"regions: []\n",
		"regions:\n- name: new\n- name: new\n",
		"- a\n",
		"a: [1, {b: 2}]\n---\na: null\n",
		"regions:\n- storageClasses: [x]\n",
		"? [a]\n: b\n",
		"a: &x {b: 1}\nc: *x\n",
		"regions:\n  name: not-a-list\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if strings.Contains(text, "#@") {
			return
		}
		base := inventoryDocument(smallInventory())
		out, err := applyLayer(LayerUserOverwrite, []byte(text), base)
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if out == nil {
			t.Fatal("no document and no error")
		}
		leaves(out)
	})
}

func FuzzDecodeLayer(f *testing.F) {
	for _, seed := range []string{"", "cmVnaW9uczoKICAtIG5hbWU6IHVzLXdlc3QtMQo=", "cmVnaW9u\ncz", "!!", "YQ", " \n\t"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, encoded string) {
		_, err := decodeLayer(LayerPlatformOverlay, encoded)
		if err != nil && !errors.Is(err, ErrInvalidInput) {
			t.Fatalf("unexpected error kind: %v", err)
		}
	})
}

func FuzzBundlePath(f *testing.F) {
	for _, seed := range []string{"config/values.yml", "/etc/passwd", "../x", "a//b", "a/./b", `a\b`, "", ".", "config/"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if checkBundlePath(p) != nil {
			return
		}
		if path.Clean(p) != p || strings.HasPrefix(p, "/") || strings.HasPrefix(p, "../") || p == ".." || p == "." {
			t.Fatalf("accepted unsafe path %q", p)
		}
	})
}

func FuzzRuntimeSpec(f *testing.F) {
	for _, seed := range []string{"values: {}\n", "a: 1\n---\nb: 2\n", "- x\n", "values: [\n", "", "values:\n  arcturus: {}\n"} {
		f.Add(seed)
	}
	const template = "#@ load(\"@ytt:overlay\", \"overlay\")\n#@overlay/match by=overlay.all\n---\n#@overlay/match missing_ok=True\nfuzzed: true\n"
	f.Fuzz(func(t *testing.T, spec string) {
		resp, err := ApplyOverlay(&rendererv1.ApplyOverlayRequest{RuntimeSpecYaml: []byte(spec), Overlay: template, OverlayReady: true, OverlayName: "fuzz"})
		if err != nil {
			if !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if resp.GetStatus() == StatusHealthy && !strings.Contains(string(resp.GetRuntimeSpecYaml()), "fuzzed: true") {
			t.Fatalf("applied overlay lost its change: %s", resp.GetRuntimeSpecYaml())
		}
	})
}
