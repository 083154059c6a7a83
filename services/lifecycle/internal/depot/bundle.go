// Package depot fetches VCF Service bundles (imgpkg bundle tarballs over
// HTTPS, imgpkg bundle images from OCI registries), extracts them safely into
// a content-addressed store keyed by the bundle image digest, and parses the
// package documents the rest of the lifecycle service needs.
//
// Everything a bundle brings is treated as hostile input: downloads, layers
// and documents are bounded, archive entries are checked before anything is
// written, and a failed fetch leaves nothing behind outside Config.TempDir
// (which it cleans up as well).
package depot

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Default limits; see Limits.
const (
	DefaultMaxDownloadBytes int64 = 2 << 30
	DefaultMaxBundleBytes   int64 = 64 << 20
	DefaultMaxFiles               = 4096
	DefaultMaxFileBytes     int64 = 16 << 20
	DefaultHTTPTimeout            = 10 * time.Minute
)

// Limits bound what a single bundle may cost. Zero fields take the defaults.
type Limits struct {
	MaxDownloadBytes int64 // whole tarball, or all blobs pulled from a registry (default 2 GiB)
	MaxBundleBytes   int64 // extracted bundle tree total (default 64 MiB)
	MaxFiles         int   // extracted regular files; directories are bounded by the same number (default 4096)
	MaxFileBytes     int64 // one extracted file (default 16 MiB)
}

func (l Limits) withDefaults() Limits {
	if l.MaxDownloadBytes == 0 {
		l.MaxDownloadBytes = DefaultMaxDownloadBytes
	}
	if l.MaxBundleBytes == 0 {
		l.MaxBundleBytes = DefaultMaxBundleBytes
	}
	if l.MaxFiles == 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxFileBytes == 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	return l
}

// Config configures a Fetcher.
type Config struct {
	Dir           string         // content store root, e.g. <data-dir>/bundles; bundles live in Dir/sha256-<hex>/
	TempDir       string         // downloads and staging go here (same filesystem as Dir, for atomic renames); default Dir/.tmp
	RootCAs       *x509.CertPool // nil = system roots (SSL_CERT_FILE works); used for https sources AND TLS registries
	AllowInsecure bool           // permit http:// tarball URLs and plain-HTTP registries for oci:// (loopback registries are plain HTTP by go-containerregistry's own rule)
	Limits        Limits         // zero fields take the defaults
	HTTPTimeout   time.Duration  // default 10 min overall per Fetch (download, extraction and inspection)
	Stall         Stall          // when a transfer that makes no progress is given up; zero fields take the defaults
	RedirectHosts []string       // hosts ("host" or "host:port") downloads may be redirected to besides the source's own (redirect.go)
}

// Fetcher fetches bundles into a content-addressed store. It is safe for
// concurrent use; one Fetcher should own a store directory.
type Fetcher struct {
	cfg       Config
	limits    Limits
	transport http.RoundTripper
	client    *http.Client

	// storeMu serialises the short check-and-rename steps on the store so a
	// Remove and a Fetch of the same digest never interleave mid-rename.
	storeMu sync.Mutex
}

// NewFetcher validates cfg, creates the store directories, checks that
// TempDir and Dir share a filesystem and removes staging leftovers of a
// previous process.
func NewFetcher(cfg Config) (*Fetcher, error) {
	if cfg.Dir == "" {
		return nil, errors.New("bundle store: Config.Dir is required")
	}
	if cfg.TempDir == "" {
		cfg.TempDir = filepath.Join(cfg.Dir, ".tmp")
	}
	if cfg.HTTPTimeout == 0 {
		cfg.HTTPTimeout = DefaultHTTPTimeout
	}
	if cfg.HTTPTimeout < 0 {
		return nil, fmt.Errorf("bundle store: HTTPTimeout %s is negative", cfg.HTTPTimeout)
	}
	l := cfg.Limits
	if l.MaxDownloadBytes < 0 || l.MaxBundleBytes < 0 || l.MaxFiles < 0 || l.MaxFileBytes < 0 {
		return nil, fmt.Errorf("bundle store: limits must not be negative: %+v", l)
	}
	for _, d := range []string{cfg.Dir, cfg.TempDir} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return nil, fmt.Errorf("bundle store: create %s: %w", d, err)
		}
	}
	if err := checkSameFilesystem(cfg.TempDir, cfg.Dir); err != nil {
		return nil, err
	}
	f := &Fetcher{cfg: cfg, limits: l.withDefaults()}
	f.transport, f.client = newHTTPClient(cfg)
	f.removeStaleTemp(time.Now().Add(-(cfg.HTTPTimeout + time.Minute)))
	return f, nil
}

// checkSameFilesystem proves that a directory made in tempDir can be renamed
// into dir, which is how a finished bundle enters the store.
func checkSameFilesystem(tempDir, dir string) error {
	probe, err := os.MkdirTemp(tempDir, tmpPrefixStage)
	if err != nil {
		return fmt.Errorf("bundle store: write to %s: %w", tempDir, err)
	}
	target := filepath.Join(dir, ".rename-probe-"+filepath.Base(probe))
	if err := os.Rename(probe, target); err != nil {
		_ = os.Remove(probe)
		return fmt.Errorf("bundle store: TempDir %s and Dir %s must be on the same filesystem: %w", tempDir, dir, err)
	}
	return os.Remove(target)
}

// Temporary entry prefixes under TempDir.
const (
	tmpPrefixDownload = "download-"
	tmpPrefixStage    = "stage-"
	tmpPrefixTrash    = "trash-"
)

// removeStaleTemp deletes what a crashed process left in TempDir. Only
// entries older than any running Fetch can be are touched, so a second
// Fetcher on the same store does not lose its work in progress.
func (f *Fetcher) removeStaleTemp(olderThan time.Time) {
	entries, err := os.ReadDir(f.cfg.TempDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, tmpPrefixDownload) && !strings.HasPrefix(n, tmpPrefixStage) && !strings.HasPrefix(n, tmpPrefixTrash) {
			continue
		}
		info, err := e.Info()
		if err != nil || info.ModTime().After(olderThan) {
			continue
		}
		_ = removeTree(filepath.Join(f.cfg.TempDir, n))
	}
}

// removeTree deletes a tree whose directories may have been made read-only.
func removeTree(dir string) error {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o750)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
