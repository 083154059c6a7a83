package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

const metaDoc = `apiVersion: data.packaging.carvel.dev/v1alpha1
kind: PackageMetadata
metadata:
  name: arcturus.example.com
spec:
  displayName: "Arcturus"
  providerName: Corp
  shortDescription: "OCI Registry"
`

const pkgDoc = `apiVersion: packaging.carvel.dev/v1alpha1
kind: Package
metadata:
  name: arcturus.example.com.9.1.0
  annotations:
    vcf.broadcom.com/kubernetes-constraint: ">=1.30.0"
    precheck.vcfsm.io/_service: arcturus-precheck
spec:
  refName: arcturus.example.com
  version: 9.1.0
  kubernetesVersionSelection:
    constraints: ">=1.29.0"
  valuesSchema:
    openAPIv3:
      title: arcturus values schema
      properties:
        regions:
          type: array
`

func TestParsePackageFile(t *testing.T) {
	wantPkg := bundle.Package{
		Name:    "arcturus.example.com.9.1.0",
		RefName: "arcturus.example.com",
		Version: "9.1.0",
		Annotations: map[string]string{
			"vcf.broadcom.com/kubernetes-constraint": ">=1.30.0",
			"precheck.vcfsm.io/_service":             "arcturus-precheck",
		},
		KubernetesVersionConstraints: ">=1.29.0",
		ValuesSchema: map[string]any{
			"title":      "arcturus values schema",
			"properties": map[string]any{"regions": map[string]any{"type": "array"}},
		},
		ProviderName: "Corp",
		DisplayName:  "Arcturus",
	}
	withoutMeta := wantPkg
	withoutMeta.ProviderName, withoutMeta.DisplayName = "", ""

	tests := []struct {
		name     string
		file     string
		want     bundle.Package
		wantYAML string // the Package document as returned, verbatim
		wantMeta bool
		errMsg   string // non-empty: ErrInvalidPackage containing this
	}{
		{name: "metadata then package", file: "---\n" + metaDoc + "---\n" + pkgDoc, want: wantPkg, wantYAML: "---\n" + pkgDoc, wantMeta: true},
		{name: "package then metadata", file: pkgDoc + "---\n" + metaDoc, want: wantPkg, wantYAML: pkgDoc, wantMeta: true},
		{name: "empty leading documents", file: "---\n---\n# comment only\n---\n" + pkgDoc, want: withoutMeta, wantYAML: "---\n" + pkgDoc},
		{name: "CRLF line endings", file: strings.ReplaceAll("---\r\n"+pkgDoc, "\n", "\r\n"), want: withoutMeta, wantYAML: strings.ReplaceAll("---\r\n"+pkgDoc, "\n", "\r\n")},
		{name: "document end marker", file: pkgDoc + "...\n", want: withoutMeta, wantYAML: pkgDoc + "...\n"},
		{name: "other kinds are ignored", file: "apiVersion: v1\nkind: ConfigMap\n---\n" + pkgDoc, want: withoutMeta, wantYAML: "---\n" + pkgDoc},
		{name: "block scalar containing dashes stays in its document", file: "---\n" + strings.Replace(pkgDoc, "  refName:", "  description: |\n    ---\n    not a marker\n  refName:", 1),
			want: withoutMeta, wantYAML: "---\n" + strings.Replace(pkgDoc, "  refName:", "  description: |\n    ---\n    not a marker\n  refName:", 1)},
		{name: "null version (source tree)", file: strings.Replace(pkgDoc, "version: 9.1.0", "version: # Set by build process", 1),
			want: func() bundle.Package { p := withoutMeta; p.Version = ""; return p }(), wantYAML: strings.Replace(pkgDoc, "version: 9.1.0", "version: # Set by build process", 1)},
		{name: "missing version", file: strings.Replace(pkgDoc, "  version: 9.1.0\n", "", 1),
			want: func() bundle.Package { p := withoutMeta; p.Version = ""; return p }(), wantYAML: strings.Replace(pkgDoc, "  version: 9.1.0\n", "", 1)},

		{name: "empty file", file: "", errMsg: "no Package document"},
		{name: "only metadata", file: metaDoc, errMsg: "no Package document"},
		{name: "two packages", file: pkgDoc + "---\n" + pkgDoc, errMsg: "2 Package documents"},
		{name: "two metadata documents", file: metaDoc + "---\n" + metaDoc + "---\n" + pkgDoc, errMsg: "2 PackageMetadata documents"},
		{name: "not YAML", file: "kind: Package\n  apiVersion: [unclosed\n", errMsg: "line 1 is not valid YAML"},
		{name: "error names the line of the document", file: pkgDoc + "---\nkind: [\n", errMsg: "line 19 is not valid YAML"},
		{name: "scalar document", file: "just a string\n---\n" + pkgDoc, errMsg: "not a YAML mapping"},
		{name: "wrong apiVersion", file: strings.Replace(pkgDoc, "packaging.carvel.dev/v1alpha1", "packaging.carvel.dev/v2", 1), errMsg: `apiVersion "packaging.carvel.dev/v2"`},
		{name: "numeric version", file: strings.Replace(pkgDoc, "version: 9.1.0", "version: 1.10", 1), errMsg: "spec.version is 1.1, not a string"},
		{name: "annotation that is not a string", file: strings.Replace(pkgDoc, `arcturus-precheck`, `{nested: true}`, 1), errMsg: "field metadata.annotations"},
		{name: "refName that is a list", file: strings.Replace(pkgDoc, "refName: arcturus.example.com", "refName: [a]", 1), errMsg: "field spec.refName"},
		{name: "too many documents", file: strings.Repeat("---\n", maxPackageDocs+1) + pkgDoc, errMsg: "YAML documents, more than"},
		{name: "too big", file: pkgDoc + "# " + strings.Repeat("x", maxPackageBytes), errMsg: "bytes, more than"},
		{name: "alias bomb", file: pkgDoc + "---\n" + aliasBomb(), errMsg: "not valid YAML"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePackageFile([]byte(tc.file))
			if tc.errMsg != "" {
				require.ErrorIs(t, err, bundle.ErrInvalidPackage)
				require.Contains(t, err.Error(), tc.errMsg)
				require.Contains(t, err.Error(), "package.yml")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got.pkg)
			require.Equal(t, tc.wantYAML, string(got.packageYAML))
			if tc.wantMeta {
				require.Equal(t, "PackageMetadata", got.metadata["kind"])
				require.Equal(t, "Arcturus", got.metadata["spec"].(map[string]any)["displayName"])
			} else {
				require.Nil(t, got.metadata)
			}
			// The Package document alone must parse to the same Package.
			again, err := parsePackageFile(got.packageYAML)
			require.NoError(t, err)
			require.Equal(t, withoutNames(tc.want), again.pkg)
		})
	}
}

func withoutNames(p bundle.Package) bundle.Package {
	p.ProviderName, p.DisplayName = "", ""
	return p
}

// aliasBomb is a "billion laughs" document: a few lines that expand
// exponentially if a parser follows aliases blindly.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		b.WriteString("a")
		b.WriteString(strconv.Itoa(i))
		b.WriteString(": &a")
		b.WriteString(strconv.Itoa(i))
		b.WriteString(" [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a")
			b.WriteString(strconv.Itoa(i - 1))
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestParseExamplePackage parses the real example's package.yml (copied
// under bundletest/testdata): leading "---", null version, metadata first.
func TestParseExamplePackage(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "bundletest", "testdata", "myservice-example", "package.yml"))
	require.NoError(t, err)
	got, err := parsePackageFile(raw)
	require.NoError(t, err)
	require.Equal(t, "myservice.broadcom.com", got.pkg.Name)
	require.Equal(t, "myservice.broadcom.com", got.pkg.RefName)
	require.Empty(t, got.pkg.Version)
	require.Equal(t, "My Service", got.pkg.DisplayName)
	require.Equal(t, "Broadcom", got.pkg.ProviderName)
	require.Equal(t, []any{"regions"}, got.pkg.ValuesSchema["required"])
	require.Equal(t, "myservice.broadcom.com", got.metadata["metadata"].(map[string]any)["name"])
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(got.packageYAML, &doc))
	require.Equal(t, "Package", doc["kind"])
	require.NotContains(t, string(got.packageYAML), "PackageMetadata")
}

func TestSplitYAMLDocuments(t *testing.T) {
	tests := []struct {
		in    string
		texts []string
		lines []int
	}{
		{"", []string{""}, []int{1}},
		{"a: 1\n", []string{"a: 1\n"}, []int{1}},
		{"---\na: 1\n", []string{"---\na: 1\n"}, []int{1}},
		{"a: 1\n---\nb: 2\n", []string{"a: 1\n", "---\nb: 2\n"}, []int{1, 2}},
		{"a: 1\n--- # c\nb: 2", []string{"a: 1\n", "--- # c\nb: 2"}, []int{1, 2}},
		{"a: 1\n--- !!map\nb: 2\n", []string{"a: 1\n", "--- !!map\nb: 2\n"}, []int{1, 2}},
		{"a: |\n  ---\n----\n---x\n", []string{"a: |\n  ---\n----\n---x\n"}, []int{1}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			docs := splitYAMLDocuments([]byte(tc.in))
			var texts []string
			var lines []int
			for _, d := range docs {
				texts = append(texts, string(d.text))
				lines = append(lines, d.line)
			}
			require.Equal(t, tc.texts, texts)
			require.Equal(t, tc.lines, lines)
			require.Equal(t, tc.in, strings.Join(texts, ""), "splitting loses nothing")
		})
	}
}

func TestParseImagesLock(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name   string
		lock   string
		want   []bundle.Image
		errMsg string
	}{
		{name: "empty", lock: "---\napiVersion: imgpkg.carvel.dev/v1alpha1\nkind: ImagesLock\nimages: []\n"},
		{name: "entries are normalised like imgpkg does", lock: "apiVersion: imgpkg.carvel.dev/v1alpha1\nkind: ImagesLock\nimages:\n- image: registry.example.com/ui@" + digest + "\n  annotations:\n    kbld.carvel.dev/id: ui\n- image: ubuntu@" + digest + "\n",
			want: []bundle.Image{
				{Image: "registry.example.com/ui@" + digest, Annotations: map[string]string{"kbld.carvel.dev/id": "ui"}},
				{Image: "index.docker.io/library/ubuntu@" + digest},
			}},
		{name: "tag instead of digest", lock: "apiVersion: imgpkg.carvel.dev/v1alpha1\nkind: ImagesLock\nimages:\n- image: registry.example.com/ui:1.0\n", errMsg: "digest form"},
		{name: "wrong kind", lock: "apiVersion: imgpkg.carvel.dev/v1alpha1\nkind: BundleLock\n", errMsg: "kind"},
		{name: "unknown field", lock: "apiVersion: imgpkg.carvel.dev/v1alpha1\nkind: ImagesLock\nextra: 1\n", errMsg: "unknown field"},
		{name: "not YAML", lock: "images: [\n", errMsg: "images.yml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseImagesLock([]byte(tc.lock))
			if tc.errMsg != "" {
				require.ErrorIs(t, err, bundle.ErrHostile)
				require.Contains(t, err.Error(), tc.errMsg)
				require.Contains(t, err.Error(), ".imgpkg/images.yml")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// FuzzParsePackageFile: no input may panic, and every success has exactly
// one Package whose own document parses again.
func FuzzParsePackageFile(f *testing.F) {
	f.Add([]byte("---\n" + metaDoc + "---\n" + pkgDoc))
	f.Add([]byte(pkgDoc + "...\n"))
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("a: |\n  ---\n---\n" + pkgDoc))
	f.Add([]byte(strings.Replace(pkgDoc, "9.1.0", "1.10", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parsePackageFile(data)
		if err != nil {
			require.ErrorIs(t, err, bundle.ErrInvalidPackage)
			return
		}
		again, err := parsePackageFile(got.packageYAML)
		require.NoError(t, err)
		require.Equal(t, withoutNames(got.pkg), again.pkg)
	})
}
