package bundletest

import (
	"embed"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"carvel.dev/imgpkg/pkg/imgpkg/lockconfig"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// example is a copy of the real example bundle (myservice-example), embedded
// so the package works from any test binary, whatever its working directory.
//
//go:embed all:testdata/myservice-example
var example embed.FS

const exampleRoot = "testdata/myservice-example"

// Defaults of a BundleSpec.
const (
	DefaultName    = "myservice.broadcom.com"
	DefaultVersion = "1.0.0"
)

// BundleSpec describes a bundle tree. The zero value is the real example
// bundle as its build would stamp it: name myservice.broadcom.com, version
// 1.0.0, the example's config/, .values/, values schema and metadata.
type BundleSpec struct {
	Name         string            // spec.refName and PackageMetadata name (default DefaultName)
	Version      string            // spec.version (default DefaultVersion)
	DisplayName  string            // PackageMetadata spec.displayName (default: the example's)
	ProviderName string            // PackageMetadata spec.providerName (default: the example's)
	Annotations  map[string]string // Package metadata.annotations
	ValuesSchema map[string]any    // spec.valuesSchema.openAPIv3 (default: the example's)
	// KubernetesVersionConstraints goes to spec.kubernetesVersionSelection.constraints.
	KubernetesVersionConstraints string
	ConfigFiles                  map[string]string // files under config/ (added or replacing the example's)
	ValuesFiles                  map[string]string // files under .values/ (added or replacing the example's)
	Files                        map[string]string // any other files, relative to the bundle root
	Images                       []BundleImage     // entries of .imgpkg/images.yml
	// SystemValues are added under __system in config/.vcf/dependencies.yml,
	// the data values file the build injects (e.g. SupervisorServiceValues).
	SystemValues map[string]any
	// PackageYAML, when set, is written as package.yml verbatim and the
	// package fields above are ignored.
	PackageYAML string
	// NoPackageYAML leaves package.yml out (an invalid bundle).
	NoPackageYAML bool
}

// BundleImage is one .imgpkg/images.yml entry.
type BundleImage struct {
	Image       string            // digest reference, e.g. from PushPluginImage
	Annotations map[string]string // e.g. kbld.carvel.dev/id
	// SystemKey, when set, also puts Image under __system.<SystemKey> in
	// config/.vcf/dependencies.yml (the example reads __system.uiplugin1).
	SystemKey string
}

// NewBundleDir writes a bundle tree for spec into a new directory under
// t.TempDir() and returns it; push it with PushBundle.
func NewBundleDir(t testing.TB, spec BundleSpec) string {
	t.Helper()
	dir, err := os.MkdirTemp(t.TempDir(), "bundle-")
	require.NoError(t, err)
	files := map[string]string{}

	err = fs.WalkDir(example, exampleRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel := strings.TrimPrefix(p, exampleRoot+"/")
		if rel == "package.yml" || rel == ".imgpkg/images.yml" {
			return nil
		}
		b, err := example.ReadFile(p)
		files[rel] = string(b)
		return err
	})
	require.NoError(t, err)

	switch {
	case spec.NoPackageYAML:
	case spec.PackageYAML != "":
		files["package.yml"] = spec.PackageYAML
	default:
		files["package.yml"] = packageYAML(t, spec)
	}
	files["config/.vcf/dependencies.yml"] = dependenciesYAML(t, spec)
	for k, v := range spec.ConfigFiles {
		files[path.Join("config", k)] = v
	}
	for k, v := range spec.ValuesFiles {
		files[path.Join(".values", k)] = v
	}
	for k, v := range spec.Files {
		files[k] = v
	}
	writeFiles(t, dir, files)

	lock := lockconfig.NewEmptyImagesLock()
	for _, im := range spec.Images {
		lock.AddImageRef(lockconfig.ImageRef{Image: im.Image, Annotations: im.Annotations})
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".imgpkg"), 0o750))
	require.NoError(t, lock.WriteToPath(filepath.Join(dir, ".imgpkg", "images.yml")))
	return dir
}

// writeTree writes files (relative, forward-slash paths) into a new
// directory under t.TempDir() and returns it.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir, err := os.MkdirTemp(t.TempDir(), "tree-")
	require.NoError(t, err)
	writeFiles(t, dir, files)
	return dir
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o750))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o640))
	}
}

// examplePackageDocs returns the example's PackageMetadata and Package
// documents as generic maps.
func examplePackageDocs(t testing.TB) (meta, pkg map[string]any) {
	t.Helper()
	raw, err := example.ReadFile(exampleRoot + "/package.yml")
	require.NoError(t, err)
	for _, doc := range strings.Split(string(raw), "\n---") {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &m))
		switch m["kind"] {
		case "PackageMetadata":
			meta = m
		case "Package":
			pkg = m
		}
	}
	require.NotNil(t, meta, "example package.yml has a PackageMetadata document")
	require.NotNil(t, pkg, "example package.yml has a Package document")
	return meta, pkg
}

// packageYAML stamps the example package.yml the way the build does.
func packageYAML(t testing.TB, spec BundleSpec) string {
	t.Helper()
	name, version := spec.Name, spec.Version
	if name == "" {
		name = DefaultName
	}
	if version == "" {
		version = DefaultVersion
	}
	meta, pkg := examplePackageDocs(t)

	metaMD := meta["metadata"].(map[string]any)
	metaMD["name"] = name
	metaSpec := meta["spec"].(map[string]any)
	if spec.DisplayName != "" {
		metaSpec["displayName"] = spec.DisplayName
	}
	if spec.ProviderName != "" {
		metaSpec["providerName"] = spec.ProviderName
	}

	pkgMD := pkg["metadata"].(map[string]any)
	pkgMD["name"] = name + "." + version // Carvel convention: <refName>.<version>
	if len(spec.Annotations) > 0 {
		pkgMD["annotations"] = spec.Annotations
	}
	pkgSpec := pkg["spec"].(map[string]any)
	pkgSpec["refName"] = name
	pkgSpec["version"] = version
	if spec.ValuesSchema != nil {
		pkgSpec["valuesSchema"] = map[string]any{"openAPIv3": spec.ValuesSchema}
	}
	if spec.KubernetesVersionConstraints != "" {
		pkgSpec["kubernetesVersionSelection"] = map[string]any{"constraints": spec.KubernetesVersionConstraints}
	}

	metaYAML, err := yaml.Marshal(meta)
	require.NoError(t, err)
	pkgYAML, err := yaml.Marshal(pkg)
	require.NoError(t, err)
	return "---\n" + string(metaYAML) + "---\n" + string(pkgYAML)
}

// dependenciesYAML writes config/.vcf/dependencies.yml, the data values the
// build injects under __system.
func dependenciesYAML(t testing.TB, spec BundleSpec) string {
	t.Helper()
	system := map[string]any{"uiplugin1": ""}
	for _, im := range spec.Images {
		if im.SystemKey != "" {
			system[im.SystemKey] = im.Image
		}
	}
	for k, v := range spec.SystemValues {
		system[k] = v
	}
	body, err := yaml.Marshal(map[string]any{"__system": system})
	require.NoError(t, err)
	return "#@data/values\n#@overlay/match-child-defaults missing_ok=True\n---\n" + string(body)
}

// SupervisorServiceValues is the __system.supervisorService value the build
// injects for a SupervisorService bundle (see filesystem-layout.md).
func SupervisorServiceValues(image, refName, version string) map[string]any {
	return map[string]any{
		"package": map[string]any{
			"apiVersion": "packaging.carvel.dev/v1alpha1",
			"kind":       "Package",
			"metadata":   map[string]any{"name": refName + "." + version},
			"spec": map[string]any{
				"refName": refName,
				"version": version,
				// The flow supervisor-services/dev-guide.md asks for, which
				// kapp-controller runs: fetch, ytt and kbld, kapp.
				"template": map[string]any{"spec": map[string]any{
					"fetch": []any{map[string]any{"imgpkgBundle": map[string]any{"image": image}}},
					"template": []any{
						map[string]any{"ytt": map[string]any{"paths": []any{"config/"}}},
						map[string]any{"kbld": map[string]any{"paths": []any{"-", ".imgpkg/images.yml"}}},
					},
					"deploy": []any{map[string]any{"kapp": map[string]any{}}},
				}},
			},
		},
		"packageMetadata": map[string]any{
			"apiVersion": "data.packaging.carvel.dev/v1alpha1",
			"kind":       "PackageMetadata",
			"metadata":   map[string]any{"name": refName},
			"spec":       map[string]any{"displayName": refName, "shortDescription": "Supervisor Service " + refName},
		},
	}
}
