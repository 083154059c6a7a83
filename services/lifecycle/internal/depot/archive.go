package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// An archive is one stored bundle as a plain tar stream: bundle.json, then
// tree/ (directories before their contents, in lexical order, no times,
// owners or modes worth keeping). It is how a bundle travels to a store
// other replicas reach; Restore puts it back, through the same checks as a
// download's layers.

// Archive writes the stored bundle of digest to w as an archive. It
// returns an error wrapping ErrNotFound when the digest is not stored.
func (f *Fetcher) Archive(digest string, w io.Writer) error {
	dir, err := f.bundlePath(digest)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, factsFile)); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s", bundle.ErrNotFound, digest)
	}
	tw := tar.NewWriter(w)
	if err := archiveFile(tw, filepath.Join(dir, factsFile), factsFile); err != nil {
		return fmt.Errorf("archive bundle %s: %w", digest, err)
	}
	tree := filepath.Join(dir, treeDir)
	err = filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o750, Format: tar.FormatPAX})
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s in the stored tree is not a regular file", name)
		}
		return archiveFile(tw, p, name)
	})
	if err != nil {
		return fmt.Errorf("archive bundle %s: %w", digest, err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive bundle %s: %w", digest, err)
	}
	return nil
}

func archiveFile(tw *tar.Writer, p, name string) error {
	fh, err := os.Open(p)
	if err != nil {
		return err
	}
	defer func() { _ = fh.Close() }()
	info, err := fh.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: info.Size(), Mode: 0o640, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(tw, fh)
	return err
}

// Restore stores the bundle an archive of digest holds and returns it, as
// Load would. The archive is untrusted: it is extracted with the same
// checks and limits as a bundle layer, read to its end (so a reader that
// verifies a checksum at EOF can refuse it), and stored only when its
// bundle.json names digest and its tree parses. An error leaves nothing
// behind. Restoring a digest already stored returns the stored bundle.
func (f *Fetcher) Restore(ctx context.Context, digest string, r io.Reader) (*bundle.Bundle, error) {
	if b, ok, err := f.reuse(digest, ""); ok || err != nil {
		return b, err
	}
	stage, err := os.MkdirTemp(f.cfg.TempDir, tmpPrefixStage)
	if err != nil {
		return nil, fmt.Errorf("restore bundle %s: create staging directory: %w", digest, err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = removeTree(stage)
		}
	}()
	if err := f.extractArchive(ctx, stage, digest, r); err != nil {
		return nil, fmt.Errorf("restore bundle %s: %w", digest, err)
	}
	if err := checkStaged(stage, digest); err != nil {
		return nil, fmt.Errorf("restore bundle %s: %w", digest, err)
	}
	if err := os.Chmod(filepath.Join(stage, factsFile), 0o444); err != nil {
		return nil, err
	}
	if err := makeReadOnly(filepath.Join(stage, treeDir)); err != nil {
		return nil, fmt.Errorf("restore bundle %s: seal tree: %w", digest, err)
	}
	if err := f.commit(stage, digest); err != nil {
		return nil, err
	}
	committed = true
	return f.Load(digest)
}

// extractArchive writes an archive into stage and reads r to its end.
func (f *Fetcher) extractArchive(ctx context.Context, stage, digest string, r io.Reader) error {
	// bundle.json rides along the tree: room for it on top of the limits.
	lim := f.limits
	lim.MaxFiles++
	lim.MaxFileBytes = max(lim.MaxFileBytes, maxFactsSize)
	lim.MaxBundleBytes += maxFactsSize
	x, err := newExtractor(stage, lim)
	if err != nil {
		return err
	}
	defer func() { _ = x.Close() }()
	if err := x.extractTar(ctx, r, "archive of "+digest); err != nil {
		return err
	}
	// The tar end marker is not the end of the stream: read on, so a
	// checksum verified at EOF is verified before anything is stored.
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	return nil
}

// checkStaged checks that a staged bundle is digest's and whole.
func checkStaged(stage, digest string) error {
	raw, err := readFileLimited(filepath.Join(stage, factsFile), maxFactsSize)
	if err != nil {
		return fmt.Errorf("%w: the archive has no readable %s: %w", bundle.ErrHostile, factsFile, err)
	}
	var facts storedFacts
	if err := json.Unmarshal(raw, &facts); err != nil {
		return fmt.Errorf("%w: corrupt %s: %w", bundle.ErrHostile, factsFile, err)
	}
	if facts.Version != factsVersion || facts.Digest != digest {
		return fmt.Errorf("%w: %s describes %q (format %d), not this bundle", bundle.ErrHostile, factsFile, facts.Digest, facts.Version)
	}
	if _, err := openTree(filepath.Join(stage, treeDir)); err != nil {
		return err
	}
	return nil
}
