package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"carvel.dev/ytt/pkg/cmd/template"
	"carvel.dev/ytt/pkg/cmd/ui"
	"carvel.dev/ytt/pkg/files"
	"github.com/stretchr/testify/require"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
	"github.com/vcfsm/vcfsm/services/renderer/internal/render"
	"github.com/vcfsm/vcfsm/services/renderer/internal/sandbox"
)

// Run with:
//
//	go test -run '^$' -bench . -benchmem ./internal/bench/

// TestMain lets the test binary serve as the pool's worker executable.
func TestMain(m *testing.M) {
	sandbox.MaybeRunWorker()
	code := m.Run()
	if cliDir != "" {
		_ = os.RemoveAll(cliDir)
	}
	os.Exit(code)
}

const (
	testdata   = "../../testdata"
	exampleDir = testdata + "/bundles/myservice-example"
	valuesFile = testdata + "/values-myservice/test-multi-region.yml"
)

func readTree(tb testing.TB, root string) map[string][]byte {
	tb.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = data
		return nil
	})
	require.NoError(tb, err)
	return out
}

func bundle(tb testing.TB, root, digest string) *commonv1.Bundle {
	b := &commonv1.Bundle{Digest: digest}
	for p, data := range readTree(tb, root) {
		b.Files = append(b.Files, &commonv1.BundleFile{Path: p, Content: data})
	}
	return b
}

// yttFiles builds ytt's in-memory files as `ytt -f <dir>` orders them.
func yttFiles(tree map[string][]byte) []*files.File {
	paths := make([]string, 0, len(tree))
	for p := range tree {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	out := make([]*files.File, 0, len(paths))
	for _, p := range paths {
		out = append(out, files.MustNewFileFromSource(files.NewBytesSource(p, tree[p])))
	}
	return files.NewSortedFiles(out)
}

// yttLibrary is `ytt -f <files> --data-values-file values.yml` through
// ytt's own command implementation, in-process.
func yttLibrary(tb testing.TB, tree map[string][]byte, values []byte) []byte {
	opts := template.NewOptions()
	opts.DataValuesFlags.FromFiles = []string{"values.yml"}
	opts.DataValuesFlags.ReadFilesFunc = func(string) ([]*files.File, error) {
		return []*files.File{files.MustNewFileFromSource(files.NewBytesSource("values.yml", values))}, nil
	}
	out := opts.RunWithFiles(template.Input{Files: yttFiles(tree)}, ui.NewCustomWriterTTY(false, io.Discard, io.Discard))
	require.NoError(tb, out.Err)
	text, err := out.DocSet.AsBytes()
	require.NoError(tb, err)
	return text
}

var cliDir string

func yttCLI(tb testing.TB) string {
	tb.Helper()
	if cliDir == "" {
		dir, err := os.MkdirTemp("", "renderer-bench-ytt-")
		require.NoError(tb, err)
		cliDir = dir
		// go test puts its own go command first on the PATH.
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "ytt"), "carvel.dev/ytt/cmd/ytt").CombinedOutput()
		require.NoError(tb, err, "%s", out)
	}
	return filepath.Join(cliDir, "ytt")
}

// BenchmarkRender renders the example bundle's config/ with its
// multi-region test values. The renderer's runs are warm: the bundle is
// parsed and cached, requests name its digest only.
func BenchmarkRender(b *testing.B) {
	config := readTree(b, filepath.Join(exampleDir, "config"))
	values, err := os.ReadFile(valuesFile)
	require.NoError(b, err)
	want := yttLibrary(b, config, values)
	ctx := context.Background()
	full := bundle(b, exampleDir, "sha256:bench-example")
	request := func(bundle *commonv1.Bundle) *rendererv1.RenderResourcesRequest {
		return &rendererv1.RenderResourcesRequest{Bundle: bundle, Values: &rendererv1.ValueLayers{UserOverwrite: base64.StdEncoding.EncodeToString(values)}}
	}
	warm := request(&commonv1.Bundle{Digest: full.GetDigest()})

	b.Run("ytt-library", func(b *testing.B) {
		for b.Loop() {
			yttLibrary(b, config, values)
		}
	})

	b.Run("renderer-in-process", func(b *testing.B) {
		engine, err := render.NewEngine(4)
		require.NoError(b, err)
		first, err := engine.RenderResources(ctx, request(full))
		require.NoError(b, err)
		require.Equal(b, string(want), string(first.GetYaml()))
		for b.Loop() {
			if _, err := engine.RenderResources(ctx, warm); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("renderer-worker-pool", func(b *testing.B) {
		pool, err := sandbox.New(sandbox.Config{Workers: 1, Timeout: 10 * time.Second, MemoryLimit: 512 << 20, CacheSize: 4, IsolateNetwork: true})
		require.NoError(b, err)
		defer func() { _ = pool.Close() }()
		first, err := pool.RenderResources(ctx, request(full))
		require.NoError(b, err)
		require.Equal(b, string(want), string(first.GetYaml()))
		for b.Loop() {
			if _, err := pool.RenderResources(ctx, warm); err != nil {
				b.Fatal(err)
			}
		}
	})

	// Memo misses: the bundle is warm, the layers differ every time, so the
	// whole value pipeline (transpiler included) runs.
	fresh := func(i int) *rendererv1.RenderResourcesRequest {
		changed := append(append([]byte{}, values...), fmt.Sprintf("benchIteration: %d\n", i)...)
		return &rendererv1.RenderResourcesRequest{Bundle: warm.GetBundle(), Values: &rendererv1.ValueLayers{UserOverwrite: base64.StdEncoding.EncodeToString(changed)}}
	}

	b.Run("renderer-in-process-new-layers", func(b *testing.B) {
		engine, err := render.NewEngine(4)
		require.NoError(b, err)
		_, err = engine.RenderResources(ctx, request(full))
		require.NoError(b, err)
		i := 0
		for b.Loop() {
			i++
			if _, err := engine.RenderResources(ctx, fresh(i)); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("renderer-worker-pool-new-layers", func(b *testing.B) {
		pool, err := sandbox.New(sandbox.Config{Workers: 1, Timeout: 10 * time.Second, MemoryLimit: 512 << 20, CacheSize: 4, IsolateNetwork: true})
		require.NoError(b, err)
		defer func() { _ = pool.Close() }()
		_, err = pool.RenderResources(ctx, request(full))
		require.NoError(b, err)
		i := 0
		for b.Loop() {
			i++
			if _, err := pool.RenderResources(ctx, fresh(i)); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("ytt-cli-process", func(b *testing.B) {
		cli := yttCLI(b)
		args := []string{"-f", filepath.Join(exampleDir, "config"), "--data-values-file", valuesFile}
		out, err := exec.Command(cli, args...).Output()
		require.NoError(b, err)
		require.Equal(b, string(want), string(out))
		for b.Loop() {
			if err := exec.Command(cli, args...).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// inventory50x20 is 50 regions of 20 Supervisors each, every Supervisor
// with all of api.md's fields and one management service.
func inventory50x20() *commonv1.Inventory { return inventoryOf(50, 20) }

// inventoryOf is regions × perRegion Supervisors, shaped as inventory50x20.
func inventoryOf(regions, perRegion int) *commonv1.Inventory {
	inv := &commonv1.Inventory{}
	for r := 0; r < regions; r++ {
		region := &commonv1.Region{Name: fmt.Sprintf("region-%02d", r), StorageClasses: []string{"platinum", "gold", "silver"}}
		for s := 0; s < perRegion; s++ {
			region.Supervisors = append(region.Supervisors, &commonv1.Supervisor{
				Name:                fmt.Sprintf("supervisor-%02d-%02d", r, s),
				Id:                  fmt.Sprintf("domain-c%d", r*100+s),
				Version:             "9.0.0.0",
				DefaultStorageClass: "vsan-default",
				VcenterName:         fmt.Sprintf("vcenter%02d.example.com", r),
				VcenterId:           fmt.Sprintf("vc-uuid-%02d", r),
				KubernetesVersion:   "v1.30.2+vmware.1",
				ManagementServices: map[string]*commonv1.ManagementService{
					"vcf-depot": {
						Addresses: []string{fmt.Sprintf("10.%d.%d.100", r, s)},
						CaChain:   "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
						Ports:     map[string]*commonv1.ServicePort{"https": {Port: 443, Protocol: "TCP"}},
					},
				},
			})
		}
		inv.Regions = append(inv.Regions, region)
	}
	return inv
}

// inventoryYAML writes the inventory as YAML text, field for field what the
// renderer hands over as nodes; with nested it also repeats it under
// `inventory`, as the renderer does.
func inventoryYAML(inv *commonv1.Inventory, nested bool) []byte {
	var b strings.Builder
	writeRegions := func(indent string) {
		b.WriteString(indent + "regions:\n")
		for _, r := range inv.GetRegions() {
			fmt.Fprintf(&b, "%s- name: %s\n%s  supervisors:\n", indent, r.GetName(), indent)
			for _, s := range r.GetSupervisors() {
				p := indent + "    "
				fmt.Fprintf(&b, "%s  - name: %s\n%sid: %s\n%sversion: %s\n%sdefaultStorageClass: %s\n%svcenterName: %s\n%svcenterId: %s\n",
					indent, s.GetName(), p, s.GetId(), p, s.GetVersion(), p, s.GetDefaultStorageClass(), p, s.GetVcenterName(), p, s.GetVcenterId())
				fmt.Fprintf(&b, "%smanagementServices:\n%s  vcf-depot:\n%s    addresses:\n", p, p, p)
				ms := s.GetManagementServices()["vcf-depot"]
				fmt.Fprintf(&b, "%s    - %s\n%s    caChain: %q\n%s    ports:\n%s      https:\n%s        port: 443\n%s        protocol: TCP\n",
					p, ms.GetAddresses()[0], p, ms.GetCaChain(), p, p, p, p)
				fmt.Fprintf(&b, "%skubernetesVersion: %s\n", p, s.GetKubernetesVersion())
			}
			fmt.Fprintf(&b, "%s  storageClasses:\n", indent)
			for _, c := range r.GetStorageClasses() {
				fmt.Fprintf(&b, "%s  - %s\n", indent, c)
			}
		}
	}
	writeRegions("")
	if nested {
		b.WriteString("inventory:\n")
		writeRegions("  ")
	}
	return []byte(b.String())
}

// BenchmarkTranspile runs the example bundle's transpiler over a 50 × 20
// inventory: ytt's library fed YAML text, against the renderer, which hands
// ytt the inventory as ready-made YAML nodes.
func BenchmarkTranspile(b *testing.B) {
	inv := inventory50x20()
	transpiler := map[string][]byte{}
	for p, data := range readTree(b, filepath.Join(exampleDir, ".values")) {
		if p == "transpiler.yml" {
			transpiler[p] = data
		}
	}
	engine, err := render.NewEngine(4)
	require.NoError(b, err)
	parsed, err := engine.Bundle(bundle(b, exampleDir, "sha256:bench-example"))
	require.NoError(b, err)
	want, err := parsed.Transpile(inv)
	require.NoError(b, err)

	for _, tc := range []struct {
		name   string
		nested bool
	}{
		{"ytt-library-yaml-text", false},
		{"ytt-library-yaml-text-with-inventory-key", true},
	} {
		text := inventoryYAML(inv, tc.nested)
		require.Equal(b, string(want), string(yttLibrary(b, transpiler, text)))
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				yttLibrary(b, transpiler, text)
			}
		})
	}
	b.Run("renderer-structured", func(b *testing.B) {
		for b.Loop() {
			if _, err := parsed.Transpile(inv); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRender1000Supervisors transpiles and renders the example
// bundle for 100 regions × 10 Supervisors through the worker pool, and
// runs ytt's library on the same input (the transpiler over the inventory
// as YAML text, then the templates over its output), alternating the two
// in one run; it reports the pool's time as a multiple of the library's.
// The layers change every round (a memo hit would measure nothing).
func BenchmarkRender1000Supervisors(b *testing.B) {
	ctx := context.Background()
	inv := inventoryOf(100, 10)
	transpiler := map[string][]byte{}
	for p, data := range readTree(b, filepath.Join(exampleDir, ".values")) {
		if p == "transpiler.yml" {
			transpiler[p] = data
		}
	}
	tree := readTree(b, exampleDir)
	tree["config/server.lib.yml"] = []byte(scaleServer)
	config := map[string][]byte{}
	full := &commonv1.Bundle{Digest: "sha256:bench-scale"}
	for p, data := range tree {
		full.Files = append(full.Files, &commonv1.BundleFile{Path: p, Content: data})
		if rel, ok := strings.CutPrefix(p, "config/"); ok {
			config[rel] = data
		}
	}
	text := inventoryYAML(inv, false)
	library := func(i int) []byte {
		values := append(yttLibrary(b, transpiler, text), fmt.Sprintf("benchIteration: %d\n", i)...)
		return yttLibrary(b, config, values)
	}
	pool, err := sandbox.New(sandbox.Config{Workers: 1, Timeout: time.Minute, MemoryLimit: 1 << 30, CacheSize: 4, IsolateNetwork: true})
	require.NoError(b, err)
	defer func() { _ = pool.Close() }()
	request := func(bundle *commonv1.Bundle, i int) *rendererv1.RenderResourcesRequest {
		return &rendererv1.RenderResourcesRequest{Bundle: bundle, Values: &rendererv1.ValueLayers{
			Inventory: inv, UserOverwrite: base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "benchIteration: %d\n", i))}}
	}
	first, err := pool.RenderResources(ctx, request(full, 0))
	require.NoError(b, err)
	kinds := map[string]int{}
	for _, r := range first.GetResources() {
		kinds[r.GetKind()]++
	}
	require.Equal(b, 1000, kinds["SupervisorRegistry"], "one registry per Supervisor: %v", kinds)
	require.Equal(b, 100, kinds["SupervisorService"], "one SupervisorService per region: %v", kinds)
	require.Equal(b, string(library(0)), string(first.GetYaml()), "the same output as the library")
	warm := &commonv1.Bundle{Digest: full.GetDigest()}
	var lib, rend time.Duration
	i := 0
	for b.Loop() {
		i++
		start := time.Now()
		library(i)
		lib += time.Since(start)
		start = time.Now()
		if _, err := pool.RenderResources(ctx, request(warm, i)); err != nil {
			b.Fatal(err)
		}
		rend += time.Since(start)
	}
	b.ReportMetric(float64(lib.Milliseconds())/float64(i), "ms-library")
	b.ReportMetric(float64(rend.Milliseconds())/float64(i), "ms-renderer")
	b.ReportMetric(float64(rend)/float64(lib), "x-library")
}

// scaleServer renders one SupervisorService per region and one
// SupervisorRegistry per Supervisor of the region.
const scaleServer = `#@ load("@ytt:data", "data")

#@ def singleton():
#@   return []
#@ end

#@ def server(region):
#@   docs = [{
#@     "apiVersion": "services.vcfa.broadcom.com/v2",
#@     "kind": "SupervisorService",
#@     "metadata": {"labels": {"services.vcfa.broadcom.com/name": "install-" + region["name"]}},
#@     "spec": {"region": region["name"], "supervisor": region["hostSupervisor"]["name"]},
#@   }]
#@   for s in region["clientSupervisors"]:
#@     docs.append({
#@       "apiVersion": "services.vcfa.broadcom.com/v2",
#@       "kind": "SupervisorRegistry",
#@       "metadata": {"labels": {"services.vcfa.broadcom.com/name": "registry-" + s}},
#@       "spec": {"region": region["name"], "supervisor": s, "endpoint": "registry." + s + ".example.com:5000"},
#@     })
#@   end
#@   return docs
#@ end
`
