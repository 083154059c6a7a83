package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
)

// Store layout, per bundle:
//
//	Dir/sha256-<hex>/bundle.json   facts that are not in the tree (digests, source, signatures, plugin manifests)
//	Dir/sha256-<hex>/tree/         the extracted bundle (package.yml, config/, .imgpkg/images.yml, …)
//
// A directory named sha256-<hex> only ever appears by an atomic rename of a
// complete staging directory, so its presence means the bundle is complete.
const (
	factsFile    = "bundle.json"
	treeDir      = "tree"
	factsVersion = 1
	maxFactsSize = 64 << 20
)

var digestRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// storedFacts is bundle.json.
type storedFacts struct {
	Version             int                `json:"version"`
	Digest              string             `json:"digest"`
	Source              string             `json:"source"`
	RegistryRepository  string             `json:"registryRepository,omitempty"`
	BundledImageDigests []string           `json:"bundledImageDigests"`
	PluginManifests     map[string][]byte  `json:"pluginManifests,omitempty"`
	Signatures          []bundle.Signature `json:"signatures,omitempty"`
}

func (f *Fetcher) bundlePath(digest string) (string, error) {
	if !digestRe.MatchString(digest) {
		return "", fmt.Errorf("%w: digest %q is not of the form sha256:<64 lowercase hex>", bundle.ErrNotFound, truncate(digest, 100))
	}
	return filepath.Join(f.cfg.Dir, "sha256-"+strings.TrimPrefix(digest, "sha256:")), nil
}

// Load reopens a stored bundle, e.g. after a restart. It returns an error
// wrapping ErrNotFound when the digest is not in the store. The Bundle is
// the same as the one Fetch returned when it was stored (Source is the
// source of that first Fetch).
func (f *Fetcher) Load(digest string) (*bundle.Bundle, error) {
	dir, err := f.bundlePath(digest)
	if err != nil {
		return nil, err
	}
	raw, err := readFileLimited(filepath.Join(dir, factsFile), maxFactsSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", bundle.ErrNotFound, digest)
	}
	if err != nil {
		return nil, fmt.Errorf("load bundle %s: %w", digest, err)
	}
	var facts storedFacts
	if err := json.Unmarshal(raw, &facts); err != nil {
		return nil, fmt.Errorf("load bundle %s: corrupt %s: %w", digest, factsFile, err)
	}
	if facts.Version != factsVersion || facts.Digest != digest {
		return nil, fmt.Errorf("load bundle %s: %s describes %q (format %d), not this bundle", digest, factsFile, facts.Digest, facts.Version)
	}
	b, err := openTree(filepath.Join(dir, treeDir))
	if err != nil {
		return nil, fmt.Errorf("load bundle %s: %w", digest, err)
	}
	b.Digest = facts.Digest
	b.Source = facts.Source
	b.RegistryRepository = facts.RegistryRepository
	b.BundledImageDigests = facts.BundledImageDigests
	b.PluginManifests = facts.PluginManifests
	b.Signatures = facts.Signatures
	return b, nil
}

// Stored lists the digests of the bundles in the store, sorted, so a caller
// can garbage-collect the ones nothing refers to any more after a restart.
func (f *Fetcher) Stored() ([]string, error) {
	entries, err := os.ReadDir(f.cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("list bundle store: %w", err)
	}
	var digests []string
	for _, e := range entries {
		d := "sha256:" + strings.TrimPrefix(e.Name(), "sha256-")
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "sha256-") || !digestRe.MatchString(d) {
			continue
		}
		if _, err := os.Stat(filepath.Join(f.cfg.Dir, e.Name(), factsFile)); err == nil {
			digests = append(digests, d)
		}
	}
	sort.Strings(digests)
	return digests, nil
}

// Remove garbage-collects a stored bundle. Removing a digest that is not
// stored is not an error, so callers can retry a GC safely.
func (f *Fetcher) Remove(digest string) error {
	dir, err := f.bundlePath(digest)
	if err != nil {
		return err
	}
	trash, err := os.MkdirTemp(f.cfg.TempDir, tmpPrefixTrash)
	if err != nil {
		return fmt.Errorf("remove bundle %s: %w", digest, err)
	}
	// Rename first so a concurrent Load sees the bundle either whole or gone.
	f.storeMu.Lock()
	err = os.Rename(dir, filepath.Join(trash, "b"))
	f.storeMu.Unlock()
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		_ = os.Remove(trash)
		return fmt.Errorf("remove bundle %s: %w", digest, err)
	}
	if err := removeTree(trash); err != nil {
		return fmt.Errorf("remove bundle %s: %w", digest, err)
	}
	return nil
}

// commit moves a complete staging directory into the store. When another
// Fetch stored the same digest first, the staged copy is discarded: the
// content is identical by construction (same digest).
func (f *Fetcher) commit(stage, digest string) error {
	dir, err := f.bundlePath(digest)
	if err != nil {
		return err
	}
	f.storeMu.Lock()
	defer f.storeMu.Unlock()
	if _, err := os.Stat(dir); err == nil {
		return removeTree(stage)
	}
	if err := os.Rename(stage, dir); err != nil {
		if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTEMPTY) {
			return removeTree(stage)
		}
		return fmt.Errorf("store bundle %s: %w", digest, err)
	}
	return nil
}

func writeFacts(stage string, facts storedFacts) error {
	facts.Version = factsVersion
	raw, err := json.MarshalIndent(facts, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", factsFile, err)
	}
	if err := os.WriteFile(filepath.Join(stage, factsFile), raw, 0o444); err != nil {
		return fmt.Errorf("write %s: %w", factsFile, err)
	}
	return nil
}

// openTree reads an extracted tree back: the files, package.yml and
// images.yml. Fetch uses it too, so a fresh and a reloaded Bundle are built
// by the same code. The tree was bounded when it was extracted; limits are
// not re-applied here so lowering them never strands a stored bundle.
func openTree(dir string) (*bundle.Bundle, error) {
	b := &bundle.Bundle{Dir: dir}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == imgpkgDir {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s in the stored tree is not a regular file", rel)
		}
		content, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b.Files = append(b.Files, bundle.File{Path: rel, Content: content})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read tree: %w", err)
	}
	sort.Slice(b.Files, func(i, j int) bool { return b.Files[i].Path < b.Files[j].Path })

	lock, err := readFileLimited(filepath.Join(dir, imgpkgDir, imagesLockFile), maxLockBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: not an imgpkg bundle: %s is missing", bundle.ErrHostile, path.Join(imgpkgDir, imagesLockFile))
		}
		return nil, fmt.Errorf("%w: %s: %w", bundle.ErrHostile, path.Join(imgpkgDir, imagesLockFile), err)
	}
	images, err := parseImagesLock(lock)
	if err != nil {
		return nil, err
	}
	b.ImagesLock, b.Images = lock, images

	pkgFile, err := readFileLimited(filepath.Join(dir, packageFile), maxPackageBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: the bundle has no %s at its root (every VCF Service bundle must ship one)", bundle.ErrInvalidPackage, packageFile)
		}
		return nil, fmt.Errorf("%w: %s: %w", bundle.ErrInvalidPackage, packageFile, err)
	}
	parsed, err := parsePackageFile(pkgFile)
	if err != nil {
		return nil, err
	}
	b.PackageFile = pkgFile
	b.PackageYAML = parsed.packageYAML
	b.Package = parsed.pkg
	b.Metadata = parsed.metadata
	return b, nil
}

// readFileLimited reads a whole file that must not exceed limit bytes.
func readFileLimited(p string, limit int64) ([]byte, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(p))
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d allowed", filepath.Base(p), info.Size(), limit)
	}
	return os.ReadFile(p)
}

// makeReadOnly drops write permission on a finished tree: the store is
// content-addressed, nothing may change a bundle after it is stored.
func makeReadOnly(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
			return nil
		}
		return os.Chmod(p, 0o444)
	})
	if err != nil {
		return err
	}
	// Deepest first, so we never lock ourselves out of a parent before its children.
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := os.Chmod(dirs[i], 0o555); err != nil {
			return err
		}
	}
	return nil
}
