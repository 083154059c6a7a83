package render

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"path"
	"sort"
	"strings"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
)

// Bundle paths the renderer reads (filesystem-layout.md).
const (
	packageFile    = "package.yml"
	configDir      = "config/"
	valuesDir      = ".values/"
	transpilerFile = ".values/transpiler.yml"
)

// Bundle is a bundle's files, parsed and ready to render: what the caches
// keep per digest so that repeated renders neither re-read nor re-parse
// them. It is immutable and safe for concurrent use.
type Bundle struct {
	Digest string
	// config is config/ as `ytt -f config/` sees it, including the
	// build-time config/.vcf/dependencies.yml.
	config *library
	// transpiler is .values/transpiler.yml with the Starlark and
	// .lib.yml helpers next to it; nil when the bundle has none.
	transpiler *library
	// schema is package.yml's spec.valuesSchema.openAPIv3; nil when the
	// package declares none.
	schema *valuesSchema
}

// NeededFiles returns the files rendering reads (package.yml, config/**,
// the transpiler and its helpers), so that callers keep and send no more.
func NeededFiles(files []*commonv1.BundleFile) []*commonv1.BundleFile {
	out := make([]*commonv1.BundleFile, 0, len(files))
	for _, f := range files {
		p := f.GetPath()
		if p == packageFile || strings.HasPrefix(p, configDir) || p == transpilerFile || (strings.HasPrefix(p, valuesDir) && isLibraryFile(p)) {
			out = append(out, f)
		}
	}
	return out
}

// BundleKey returns the cache key of a bundle: its digest, or, when the
// caller sent files without one, a digest of the files themselves.
func BundleKey(b *commonv1.Bundle) (string, error) {
	if b == nil || (b.GetDigest() == "" && len(b.GetFiles()) == 0) {
		return "", invalid(LayerBundle, "", "required: a bundle digest and its files")
	}
	if b.GetDigest() != "" {
		return b.GetDigest(), nil
	}
	return contentDigest(b.GetFiles()), nil
}

// contentDigest hashes the files in path order, length-prefixed so that no
// two file sets share an encoding.
func contentDigest(files []*commonv1.BundleFile) string {
	sorted := append([]*commonv1.BundleFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].GetPath() < sorted[j].GetPath() })
	h := sha256.New()
	var n [8]byte
	for _, f := range sorted {
		for _, part := range [][]byte{[]byte(f.GetPath()), f.GetContent()} {
			binary.BigEndian.PutUint64(n[:], uint64(len(part)))
			h.Write(n[:])
			h.Write(part)
		}
	}
	return "content:sha256:" + hex.EncodeToString(h.Sum(nil))
}

// parseBundle checks a bundle's files and parses what rendering needs.
func parseBundle(digest string, files []*commonv1.BundleFile) (*Bundle, error) {
	seen := map[string]bool{}
	var (
		pkg        []byte
		config     []source
		transpiler []source
		hasTransp  bool
	)
	for _, f := range files {
		p := f.GetPath()
		if err := checkBundlePath(p); err != nil {
			return nil, err
		}
		if seen[p] {
			return nil, invalid(LayerBundle, p, "file listed twice")
		}
		seen[p] = true
		switch {
		case p == packageFile:
			pkg = f.GetContent()
		case strings.HasPrefix(p, configDir):
			config = append(config, source{path: strings.TrimPrefix(p, configDir), data: f.GetContent()})
		case p == transpilerFile:
			hasTransp = true
			transpiler = append(transpiler, source{path: strings.TrimPrefix(p, valuesDir), data: f.GetContent()})
		case strings.HasPrefix(p, valuesDir) && isLibraryFile(p):
			transpiler = append(transpiler, source{path: strings.TrimPrefix(p, valuesDir), data: f.GetContent()})
		}
	}
	if pkg == nil {
		return nil, invalid(LayerBundle, packageFile, "missing: every bundle has package.yml at its root")
	}
	if len(config) == 0 {
		return nil, invalid(LayerBundle, configDir, "missing: the bundle has no files under config/")
	}
	schema, err := loadValuesSchema(pkg)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Digest: digest, schema: schema}
	if b.config, err = newLibrary(LayerConfig, config); err != nil {
		return nil, err
	}
	if hasTransp {
		if b.transpiler, err = newLibrary(LayerTranspiler, transpiler); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// checkBundlePath accepts clean relative paths only. The files never touch
// a filesystem, but a path like ../x is a sign of a broken producer.
func checkBundlePath(p string) error {
	switch {
	case p == "":
		return invalid(LayerBundle, "", "a file has an empty path")
	case strings.HasPrefix(p, "/"), strings.Contains(p, "\\"):
		return invalid(LayerBundle, p, "path must be relative to the bundle root, with / separators")
	case path.Clean(p) != p, p == ".", p == "..", strings.HasPrefix(p, "../"):
		return invalid(LayerBundle, p, "path must be clean and stay inside the bundle (no ., .. or empty segments)")
	}
	return nil
}

// isLibraryFile reports whether ytt treats the file as a library that a
// template may load.
func isLibraryFile(p string) bool {
	return strings.HasSuffix(p, ".star") || strings.HasSuffix(p, ".lib.yml") || strings.HasSuffix(p, ".lib.yaml")
}
