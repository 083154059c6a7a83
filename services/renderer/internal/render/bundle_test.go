package render

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

func TestBundleRules(t *testing.T) {
	const values = "config/values.yml"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{
			name:  "package.yml is required",
			files: map[string]string{values: passthroughValues, packageFile: "-"},
			want:  "bundle: package.yml: missing: every bundle has package.yml at its root",
		},
		{
			name:  "package.yml holds a Package",
			files: map[string]string{values: passthroughValues, packageFile: ""},
			want:  "bundle: package.yml: expected exactly one Package document, found 0",
		},
		{
			name:  "config/ is required",
			files: map[string]string{".values/transpiler.yml": "a: 1\n"},
			want:  "bundle: config/: missing: the bundle has no files under config/",
		},
		{
			name:  "absolute paths are refused",
			files: map[string]string{values: passthroughValues, "/etc/passwd": "x"},
			want:  "bundle: /etc/passwd: path must be relative to the bundle root, with / separators",
		},
		{
			name:  "paths may not leave the bundle",
			files: map[string]string{values: passthroughValues, "config/../../x.yml": "x"},
			want:  "bundle: config/../../x.yml: path must be clean and stay inside the bundle (no ., .. or empty segments)",
		},
		{
			name:  "paths are clean",
			files: map[string]string{values: passthroughValues, "config//x.yml": "x"},
			want:  "bundle: config//x.yml: path must be clean and stay inside the bundle (no ., .. or empty segments)",
		},
		{
			name:  "backslashes are refused",
			files: map[string]string{values: passthroughValues, `config\x.yml`: "x"},
			want:  `bundle: config\x.yml: path must be relative to the bundle root, with / separators`,
		},
		{
			name:  "package.yml is YAML",
			files: map[string]string{values: passthroughValues, packageFile: "kind: [\n"},
			want:  "bundle: package.yml: invalid YAML: …",
		},
		{
			name:  "one Package only",
			files: map[string]string{values: passthroughValues, packageFile: "kind: Package\n---\nkind: Package\n"},
			want:  "bundle: package.yml: expected exactly one Package document, found 2",
		},
		{
			name:  "the values schema is a valid OpenAPI v3 schema",
			files: map[string]string{values: passthroughValues, packageFile: "kind: Package\nspec:\n  valuesSchema:\n    openAPIv3:\n      type: shape\n"},
			want:  "bundle: package.yml: spec.valuesSchema.openAPIv3 is not a valid OpenAPI v3 schema: …",
		},
		{
			name:  "a broken config template is reported when the bundle is read",
			files: map[string]string{values: passthroughValues, "config/bad.yml": "a: [\n"},
			want:  "config: bad.yml: …",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// bundleOf adds a minimal package.yml; "-" leaves it out.
			b := bundleOf("sha256:rules", tc.files)
			var files []*commonv1.BundleFile
			for _, f := range b.GetFiles() {
				if f.GetPath() == packageFile && string(f.GetContent()) == "-" {
					continue
				}
				files = append(files, f)
			}
			b.Files = files
			_, err := newTestEngine(t).RenderEffectiveValues(context.Background(), &rendererv1.RenderEffectiveValuesRequest{Bundle: b})
			require.ErrorIs(t, err, ErrInvalidInput)
			requireMessage(t, tc.want, err.Error())
		})
	}
}

func TestBundleFilesAreListedOnce(t *testing.T) {
	b := bundleOf("sha256:dup", map[string]string{"config/values.yml": passthroughValues})
	b.Files = append(b.Files, &commonv1.BundleFile{Path: "config/values.yml", Content: []byte("again")})
	_, err := newTestEngine(t).Bundle(b)
	require.ErrorIs(t, err, ErrInvalidInput)
	require.Equal(t, "bundle: config/values.yml: file listed twice", err.Error())
}

func TestBundleCache(t *testing.T) {
	e := newTestEngine(t)
	full := passthroughBundle()
	ctx := context.Background()

	_, err := e.RenderEffectiveValues(ctx, &rendererv1.RenderEffectiveValuesRequest{Bundle: &commonv1.Bundle{Digest: full.GetDigest()}})
	require.ErrorIs(t, err, ErrBundleNotCached)
	require.Equal(t, "bundle: bundle sha256:passthrough is not cached by the renderer: resend the request with the bundle's files", err.Error())

	first, err := e.Bundle(full)
	require.NoError(t, err)

	// The digest alone now finds the parsed bundle, and so do the files
	// (they are not parsed again).
	again, err := e.Bundle(&commonv1.Bundle{Digest: full.GetDigest()})
	require.NoError(t, err)
	require.Same(t, first, again)
	withFiles, err := e.Bundle(full)
	require.NoError(t, err)
	require.Same(t, first, withFiles)

	_, err = e.Bundle(nil)
	require.ErrorIs(t, err, ErrInvalidInput)
	require.Equal(t, "bundle: required: a bundle digest and its files", err.Error())
}

func TestBundleCacheIsBounded(t *testing.T) {
	e, err := NewEngine(2)
	require.NoError(t, err)
	for _, d := range []string{"sha256:a", "sha256:b", "sha256:c"} {
		_, err := e.Bundle(bundleOf(d, map[string]string{"config/values.yml": passthroughValues}))
		require.NoError(t, err)
	}
	_, err = e.Bundle(&commonv1.Bundle{Digest: "sha256:a"})
	require.ErrorIs(t, err, ErrBundleNotCached, "the least recently used bundle is evicted")
	_, err = e.Bundle(&commonv1.Bundle{Digest: "sha256:c"})
	require.NoError(t, err)
}

func TestFilesWithoutDigestAreKeyedByContent(t *testing.T) {
	e := newTestEngine(t)
	files := passthroughBundle().GetFiles()
	b1, err := e.Bundle(&commonv1.Bundle{Files: files})
	require.NoError(t, err)
	require.Regexp(t, `^content:sha256:[0-9a-f]{64}$`, b1.Digest)
	reversed := make([]*commonv1.BundleFile, len(files))
	for i, f := range files {
		reversed[len(files)-1-i] = f
	}
	b2, err := e.Bundle(&commonv1.Bundle{Files: reversed})
	require.NoError(t, err)
	require.Same(t, b1, b2, "file order does not change the key")

	changed := append([]*commonv1.BundleFile{}, files...)
	changed = append(changed, &commonv1.BundleFile{Path: "config/more.yml", Content: []byte("---\n")})
	b3, err := e.Bundle(&commonv1.Bundle{Files: changed})
	require.NoError(t, err)
	require.NotEqual(t, b1.Digest, b3.Digest)
}

func TestTranspilerHelpersComeFromValuesDir(t *testing.T) {
	// .values/render.yml is build-time input, never part of the transpiler.
	b := bundleOf("sha256:helpers", map[string]string{
		"config/values.yml":    passthroughValues,
		transpilerFile:         "#@ load(\"helpers.star\", \"answer\")\n---\nanswer: #@ answer()\n",
		".values/helpers.star": "def answer():\n  return 42\nend\n",
		".values/render.yml":   "regions: [{name: not-used}]\n",
	})
	require.Equal(t, "regions: []\nanswer: 42\n", effective(t, newTestEngine(t), b, &rendererv1.ValueLayers{}, false))
}

func TestNeededFiles(t *testing.T) {
	var files []*commonv1.BundleFile
	for _, p := range []string{
		"package.yml", "config/values.yml", "config/.vcf/dependencies.yml", "config/lib.star",
		".values/transpiler.yml", ".values/helpers.star", ".values/lib/more.lib.yml",
		".values/render.yml", ".imgpkg/images.yml", ".install/dependencies.yml", "README.md",
	} {
		files = append(files, &commonv1.BundleFile{Path: p})
	}
	var got []string
	for _, f := range NeededFiles(files) {
		got = append(got, f.GetPath())
	}
	require.Equal(t, []string{
		"package.yml", "config/values.yml", "config/.vcf/dependencies.yml", "config/lib.star",
		".values/transpiler.yml", ".values/helpers.star", ".values/lib/more.lib.yml",
	}, got)
}
