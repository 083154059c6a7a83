package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
)

// Path bounds for archive entries; real bundles are far below both.
const (
	maxEntryPathLen   = 1024
	maxEntryPathDepth = 32
)

// extractor writes the entries of one or more tar layers under root. It
// only ever creates regular files and directories, through an os.Root, so
// even a bug in the name checks cannot reach outside the staging tree.
type extractor struct {
	root   *os.Root
	limits Limits

	files, dirs int
	total       int64
	// seen records every path created so far (true = directory), to refuse
	// duplicates and file/directory conflicts across entries and layers.
	seen map[string]bool
}

func newExtractor(dir string, limits Limits) (*extractor, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &extractor{root: root, limits: limits, seen: map[string]bool{}}, nil
}

func (x *extractor) Close() error { return x.root.Close() }

func hostile(format string, args ...any) error {
	return fmt.Errorf("%w: %s", bundle.ErrHostile, fmt.Sprintf(format, args...))
}

// cleanEntryName validates a tar entry name and returns it cleaned and
// relative to the bundle root ("." for the root itself).
func cleanEntryName(name string) (string, error) {
	switch {
	case name == "":
		return "", errors.New("empty entry name")
	case len(name) > maxEntryPathLen:
		return "", fmt.Errorf("entry name longer than %d bytes", maxEntryPathLen)
	case strings.ContainsRune(name, 0):
		return "", errors.New("entry name contains a NUL byte")
	case strings.Contains(name, `\`):
		return "", errors.New("entry name contains a backslash")
	case strings.HasPrefix(name, "/"):
		return "", errors.New("absolute path")
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", errors.New("path traversal (.. component)")
		}
	}
	clean := path.Clean(name)
	if clean == "." {
		return ".", nil
	}
	if strings.Count(clean, "/") >= maxEntryPathDepth {
		return "", fmt.Errorf("deeper than %d directories", maxEntryPathDepth)
	}
	return clean, nil
}

// walkTar is the one loop that reads a tar stream, for the bundle's own
// layers and for the layers searched for UI plugin manifests alike: every
// entry's name passes cleanEntryName (an entry that fails it makes the
// whole archive hostile, wherever it is), and visit sees the cleaned name
// and the header of each entry, reading the body from tr if it wants it.
func walkTar(ctx context.Context, r io.Reader, layer string, visit func(hdr *tar.Header, name string, tr *tar.Reader) error) error {
	tr := tar.NewReader(r)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &layerReadError{layer: layer, err: err}
		}
		name, err := cleanEntryName(hdr.Name)
		if err != nil {
			return hostile("layer %s: entry %q: %v", layer, truncate(hdr.Name, 200), err)
		}
		if err := visit(hdr, name, tr); err != nil {
			return err
		}
	}
}

// isRegular reports a regular file entry.
func isRegular(hdr *tar.Header) bool {
	return hdr.Typeflag == tar.TypeReg || hdr.Typeflag == tar.TypeRegA //nolint:staticcheck // TypeRegA is what old writers emit for regular files
}

// extractTar writes one uncompressed tar stream. Sizes are counted on the
// bytes actually read, never taken from headers alone.
func (x *extractor) extractTar(ctx context.Context, r io.Reader, layer string) error {
	return walkTar(ctx, r, layer, func(hdr *tar.Header, name string, tr *tar.Reader) error {
		switch {
		case hdr.Typeflag == tar.TypeDir:
			return x.mkdir(name, layer)
		case isRegular(hdr):
			return x.writeFile(name, hdr.Size, tr, layer)
		case hdr.Typeflag == tar.TypeSymlink, hdr.Typeflag == tar.TypeLink:
			// A bundle is YAML and Starlark: it never needs links, and
			// every link is a way out of the tree, so all are refused.
			return hostile("layer %s: entry %q is a link (to %q); links are not allowed in a bundle", layer, name, truncate(hdr.Linkname, 200))
		case hdr.Typeflag == tar.TypeChar, hdr.Typeflag == tar.TypeBlock, hdr.Typeflag == tar.TypeFifo:
			return hostile("layer %s: entry %q is a device or FIFO; only regular files and directories are allowed", layer, name)
		default:
			return hostile("layer %s: entry %q has unsupported tar type %q; only regular files and directories are allowed", layer, name, string(hdr.Typeflag))
		}
	})
}

func (x *extractor) checkParents(name, layer string) error {
	for p := path.Dir(name); p != "."; p = path.Dir(p) {
		if isDir, ok := x.seen[p]; ok && !isDir {
			return hostile("layer %s: entry %q lies under %q, which is a file", layer, name, p)
		}
	}
	return nil
}

func (x *extractor) markParents(name string) {
	for p := path.Dir(name); p != "."; p = path.Dir(p) {
		if _, ok := x.seen[p]; !ok {
			x.seen[p] = true
			x.dirs++
		}
	}
}

func (x *extractor) mkdir(name, layer string) error {
	if name == "." {
		return nil
	}
	if isDir, ok := x.seen[name]; ok {
		if isDir {
			return nil // a directory listed again is harmless
		}
		return hostile("layer %s: %q appears both as a file and as a directory", layer, name)
	}
	if err := x.checkParents(name, layer); err != nil {
		return err
	}
	x.seen[name] = true
	x.dirs++
	x.markParents(name)
	if x.dirs > x.limits.MaxFiles {
		return hostile("layer %s: more than %d directories", layer, x.limits.MaxFiles)
	}
	if err := x.root.MkdirAll(name, 0o750); err != nil {
		return hostile("layer %s: create directory %q: %v", layer, name, err)
	}
	return nil
}

func (x *extractor) writeFile(name string, size int64, r io.Reader, layer string) error {
	if name == "." {
		return hostile("layer %s: a regular file entry names the bundle root", layer)
	}
	if _, ok := x.seen[name]; ok {
		return hostile("layer %s: duplicate entry %q", layer, name)
	}
	if err := x.checkParents(name, layer); err != nil {
		return err
	}
	x.files++
	if x.files > x.limits.MaxFiles {
		return hostile("layer %s: more than %d files (limit MaxFiles)", layer, x.limits.MaxFiles)
	}
	if size > x.limits.MaxFileBytes {
		return hostile("layer %s: file %q is %d bytes, more than the %d allowed (limit MaxFileBytes)", layer, name, size, x.limits.MaxFileBytes)
	}
	if x.total+size > x.limits.MaxBundleBytes {
		return hostile("layer %s: the bundle grows past %d bytes at %q (limit MaxBundleBytes)", layer, x.limits.MaxBundleBytes, name)
	}
	x.seen[name] = false
	x.markParents(name)
	if x.dirs > x.limits.MaxFiles {
		return hostile("layer %s: more than %d directories", layer, x.limits.MaxFiles)
	}
	if dir := path.Dir(name); dir != "." {
		if err := x.root.MkdirAll(dir, 0o750); err != nil {
			return hostile("layer %s: create directory %q: %v", layer, dir, err)
		}
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return hostile("layer %s: create %q: %v", layer, name, err)
	}
	// Read one byte more than allowed so an oversized body is detected even
	// if a header under-reported it.
	allowed := min(x.limits.MaxFileBytes, x.limits.MaxBundleBytes-x.total)
	n, copyErr := io.Copy(f, io.LimitReader(r, allowed+1))
	closeErr := f.Close()
	x.total += n
	switch {
	case copyErr != nil:
		return &layerReadError{layer: layer, err: fmt.Errorf("read %q: %w", name, copyErr)}
	case n > allowed:
		return hostile("layer %s: file %q exceeds the size limits (MaxFileBytes %d, MaxBundleBytes %d)", layer, name, x.limits.MaxFileBytes, x.limits.MaxBundleBytes)
	case closeErr != nil:
		return fmt.Errorf("write %q: %w", name, closeErr)
	}
	return nil
}

// layerReadError marks a failure to read a layer's bytes; whether that is the
// bundle's fault (corrupt archive) or the network's depends on where the
// bytes came from, which the caller knows.
type layerReadError struct {
	layer string
	err   error
}

func (e *layerReadError) Error() string { return fmt.Sprintf("layer %s: %v", e.layer, e.err) }
func (e *layerReadError) Unwrap() error { return e.err }

// Magic numbers of layer encodings.
var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// decompressLayer sniffs the layer encoding instead of trusting the media
// type: gzip and plain tar are accepted (what imgpkg and OCI tools write).
func decompressLayer(r io.Reader, layer string) (io.Reader, func() error, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, &layerReadError{layer: layer, err: err}
	}
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, &layerReadError{layer: layer, err: err}
		}
		zr.Multistream(true)
		return zr, zr.Close, nil
	case bytes.HasPrefix(head, zstdMagic):
		return nil, nil, hostile("layer %s is zstd-compressed; bundles must use gzip or plain tar layers", layer)
	default:
		return br, func() error { return nil }, nil
	}
}

// boundedReader fails once more than limit bytes were read, and stops early
// when the context ends. It also remembers the first error of the
// underlying reader, so a caller can tell source failures from format ones.
type boundedReader struct {
	ctx     context.Context
	r       io.Reader
	n       int64
	limit   int64
	what    string
	onRead  func(n int64)
	readErr error
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if err := b.ctx.Err(); err != nil {
		return 0, err
	}
	if remaining := b.limit - b.n + 1; int64(len(p)) > remaining {
		p = p[:remaining]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	if b.onRead != nil && n > 0 {
		b.onRead(int64(n))
	}
	if b.n > b.limit {
		return n, hostile("%s exceeds %d bytes", b.what, b.limit)
	}
	if err != nil && !errors.Is(err, io.EOF) && b.readErr == nil {
		b.readErr = err
	}
	return n, err
}
