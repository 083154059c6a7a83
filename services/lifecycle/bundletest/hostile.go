package bundletest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// HostileLimits are the fetcher limits hostile cases are sized against;
// tests use small limits so the cases stay small and fast.
type HostileLimits struct {
	MaxFiles       int
	MaxFileBytes   int64
	MaxBundleBytes int64
}

// HostileCase is one crafted bundle that a fetcher must refuse.
type HostileCase struct {
	Name    string
	Entries []Entry // the bundle layer's entries; .imgpkg/images.yml comes first so imgpkg copy accepts them
	// TruncateTail, when > 0, cuts that many bytes off the end of the
	// layer's tar stream.
	TruncateTail int
	// NotBundle pushes the image without the dev.carvel.imgpkg.bundle label.
	NotBundle bool
	// InvalidPackage says the fetcher must fail with its invalid-package
	// error (the archive itself is fine) rather than its hostile-bundle error.
	InvalidPackage bool
	// NoTarball says imgpkg itself refuses to copy this bundle to a tarball,
	// so it can only be tested from a registry.
	NoTarball bool
	// EscapeFiles are absolute paths the case tries to create; none may exist afterwards.
	EscapeFiles []string
}

// Valid bundle parts the hostile cases are built around, so that each case
// is wrong in exactly one way.
const (
	ImagesLockYAML = "---\napiVersion: imgpkg.carvel.dev/v1alpha1\nkind: ImagesLock\n"
	MinimalPackage = `---
apiVersion: packaging.carvel.dev/v1alpha1
kind: Package
metadata:
  name: hostile.example.com.1.0.0
spec:
  refName: hostile.example.com
  version: 1.0.0
`
)

// ValidEntries is a minimal valid bundle: images.yml first (imgpkg copy
// reads it), package.yml, one config file.
func ValidEntries() []Entry {
	return []Entry{
		{Name: ".imgpkg/", Type: tar.TypeDir, Mode: 0o755},
		{Name: ".imgpkg/images.yml", Body: []byte(ImagesLockYAML)},
		{Name: "package.yml", Body: []byte(MinimalPackage)},
		{Name: "config/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "config/values.yml", Body: []byte("#@data/values\n---\nregions: []\n")},
	}
}

func withValid(extra ...Entry) []Entry { return append(ValidEntries(), extra...) }

// HostileCases returns the catalogue of hostile bundles. escapeDir is a
// directory the test watches: cases that try to write outside the bundle
// aim there (absolute paths, link targets) or at relative paths that would
// land next to the fetcher's directories.
func HostileCases(escapeDir string, l HostileLimits) []HostileCase {
	abs := filepath.Join(escapeDir, "escaped-absolute.txt")
	body := []byte("pwned\n")
	many := ValidEntries()
	for i := 0; i <= l.MaxFiles; i++ {
		many = append(many, Entry{Name: fmt.Sprintf("config/many/f%05d.yml", i), Body: []byte("a: 1\n")})
	}
	total := ValidEntries()
	perFile := l.MaxFileBytes
	for i := int64(0); i*perFile <= l.MaxBundleBytes; i++ {
		total = append(total, Entry{Name: fmt.Sprintf("config/blob%03d.bin", i), Body: bytes.Repeat([]byte{'x'}, int(perFile))})
	}
	return []HostileCase{
		{Name: "path traversal", Entries: withValid(Entry{Name: "../../escaped-traversal.txt", Body: body})},
		{Name: "nested path traversal", Entries: withValid(Entry{Name: "config/../../../escaped-nested.txt", Body: body})},
		{Name: "absolute path", Entries: withValid(Entry{Name: abs, Body: body}), EscapeFiles: []string{abs}},
		{Name: "symlink out of the bundle", Entries: withValid(Entry{Name: "config/escape", Type: tar.TypeSymlink, Linkname: escapeDir})},
		{Name: "write through a symlink", Entries: withValid(
			Entry{Name: "config/escape", Type: tar.TypeSymlink, Linkname: escapeDir},
			Entry{Name: "config/escape/escaped-through-link.txt", Body: body},
		), EscapeFiles: []string{filepath.Join(escapeDir, "escaped-through-link.txt")}},
		{Name: "relative symlink inside the bundle", Entries: withValid(Entry{Name: "config/values-link.yml", Type: tar.TypeSymlink, Linkname: "values.yml"})},
		{Name: "hardlink", Entries: withValid(Entry{Name: "config/hard.yml", Type: tar.TypeLink, Linkname: "package.yml"})},
		{Name: "hardlink out of the bundle", Entries: withValid(Entry{Name: "config/hard-out", Type: tar.TypeLink, Linkname: "../../../../etc/hostname"})},
		{Name: "character device", Entries: withValid(Entry{Name: "config/null", Type: tar.TypeChar, Devmajor: 1, Devminor: 3})},
		{Name: "block device", Entries: withValid(Entry{Name: "config/sda", Type: tar.TypeBlock, Devmajor: 8, Devminor: 0})},
		{Name: "fifo", Entries: withValid(Entry{Name: "config/fifo", Type: tar.TypeFifo})},
		{Name: "too many files", Entries: many},
		{Name: "file too big", Entries: withValid(Entry{Name: "config/big.yml", Body: bytes.Repeat([]byte{'x'}, int(l.MaxFileBytes)+1)})},
		{Name: "bundle too big in total", Entries: total},
		{Name: "duplicate path", Entries: withValid(Entry{Name: "package.yml", Body: []byte(MinimalPackage)})},
		{Name: "file and directory at the same path", Entries: withValid(
			Entry{Name: "config/x", Body: body},
			Entry{Name: "config/x/y.yml", Body: body},
		)},
		// The last file's 2200-byte body is padded to 2560 bytes and followed
		// by the 1024-byte end-of-archive marker: cutting 2524 bytes stops
		// the stream in the middle of that body.
		{Name: "truncated layer", Entries: withValid(Entry{Name: "config/tail.yml", Body: bytes.Repeat([]byte("tail: true\n"), 200)}), TruncateTail: 1024 + 1500},
		{Name: "not an imgpkg bundle", Entries: ValidEntries(), NotBundle: true},
		{Name: "missing images.yml", Entries: []Entry{{Name: "package.yml", Body: []byte(MinimalPackage)}}, NoTarball: true},
		{Name: "invalid images.yml", Entries: []Entry{
			{Name: ".imgpkg/images.yml", Body: []byte("---\napiVersion: imgpkg.carvel.dev/v1alpha1\nkind: ImagesLock\nimages:\n- image: not-a-digest-ref:latest\n")},
			{Name: "package.yml", Body: []byte(MinimalPackage)},
		}, NoTarball: true},
		{Name: "missing package.yml", Entries: []Entry{{Name: ".imgpkg/images.yml", Body: []byte(ImagesLockYAML)}, {Name: "config/values.yml", Body: []byte("#@data/values\n---\n{}\n")}}, InvalidPackage: true},
		{Name: "package.yml without a Package document", Entries: []Entry{
			{Name: ".imgpkg/images.yml", Body: []byte(ImagesLockYAML)},
			{Name: "package.yml", Body: []byte("---\napiVersion: data.packaging.carvel.dev/v1alpha1\nkind: PackageMetadata\nmetadata:\n  name: x\n")},
		}, InvalidPackage: true},
		{Name: "package.yml is not YAML", Entries: []Entry{
			{Name: ".imgpkg/images.yml", Body: []byte(ImagesLockYAML)},
			{Name: "package.yml", Body: []byte("kind: Package\n  apiVersion: [unclosed\n")},
		}, InvalidPackage: true},
	}
}

// HostileLayer returns the layer bytes of a case (truncated when asked).
func HostileLayer(t testing.TB, c HostileCase) []byte {
	t.Helper()
	layer := LayerTar(t, c.Entries)
	if c.TruncateTail > 0 && c.TruncateTail < len(layer) {
		layer = layer[:len(layer)-c.TruncateTail]
	}
	return layer
}

// PushHostile pushes a case's image to <reg>/<repoTag> (labelled as an
// imgpkg bundle unless NotBundle) and returns its digest reference.
func PushHostile(t testing.TB, reg *Registry, repoTag string, c HostileCase) string {
	t.Helper()
	labels := map[string]string{BundleLabel: "true"}
	if c.NotBundle {
		labels = map[string]string{"org.example.purpose": "not-a-bundle"}
	}
	return PushImage(t, reg, repoTag, ImageFromLayer(t, HostileLayer(t, c), labels))
}

// HostileTarball pushes a case and turns it into a tarball the way a
// vendor would: imgpkg copy -b --to-tar (copy -i for NotBundle cases).
func HostileTarball(t testing.TB, reg *Registry, repoTag string, c HostileCase) string {
	t.Helper()
	ref := PushHostile(t, reg, repoTag, c)
	if c.NotBundle {
		return CopyImageToTar(t, reg, ref)
	}
	return CopyToTar(t, reg, ref)
}

// RepoName turns a case name into a valid repository path component.
func RepoName(caseName string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, caseName)
}
