package storage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"

	"github.com/vcfsm/vcfsm/platform/store"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// Shared bundles: every replica reaches the store, so a bundle one replica
// downloaded is kept there too (lifecycle.SharedBundles), as its archive
// cut into chunks:
//
//	bundles/<digest>          the manifest: size, sha256 of the archive, sha256 of each chunk
//	bundles/<digest>#<n>      chunk n (6 decimal digits), bundleChunkSize bytes but the last
//
// One chunk per transaction: 512 KiB stays well under etcd's 1.5 MiB
// request limit and uses 1 of its 128 operations per Txn. The manifest is
// written last, so a reader finds one only when every chunk is there.
const (
	bundleChunkSize       = 512 << 10
	bundleManifestVersion = 1
)

var _ lifecycle.SharedBundles = (*Repo)(nil)

type bundleManifest struct {
	Version int      `json:"version"`
	Digest  string   `json:"digest"`
	Size    int64    `json:"size"`
	SHA256  string   `json:"sha256"`
	Chunks  []string `json:"chunks"`
}

func chunkKey(digest string, n int) string { return fmt.Sprintf("%s#%06d", digest, n) }

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// HasBundle reports whether the shared store holds the bundle's manifest.
func (r *Repo) HasBundle(ctx context.Context, digest string) (bool, error) {
	_, err := r.s.Get(ctx, BucketBundles, digest)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	}
	return false, fmt.Errorf("shared bundle store: %w", err)
}

// PutBundle stores the archive write produces under digest, replacing
// what was there (a corrupt copy included).
func (r *Repo) PutBundle(ctx context.Context, digest string, write func(io.Writer) error) error {
	cw := &chunkWriter{ctx: ctx, s: r.s, digest: digest, hash: sha256.New()}
	if err := write(cw); err != nil {
		return fmt.Errorf("share bundle %s: %w", digest, err)
	}
	if err := cw.flush(); err != nil {
		return fmt.Errorf("share bundle %s: %w", digest, err)
	}
	m := bundleManifest{Version: bundleManifestVersion, Digest: digest, Size: cw.size,
		SHA256: "sha256:" + hex.EncodeToString(cw.hash.Sum(nil)), Chunks: cw.chunks}
	raw, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("share bundle %s: %w", digest, err)
	}
	if _, err := store.Put(ctx, r.s, BucketBundles, digest, raw, store.AnyRevision); err != nil {
		return fmt.Errorf("share bundle %s: %w", digest, err)
	}
	return nil
}

// chunkWriter stores what is written to it chunk by chunk.
type chunkWriter struct {
	ctx    context.Context
	s      store.Store
	digest string
	buf    []byte
	chunks []string
	size   int64
	hash   hash.Hash
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		take := min(bundleChunkSize-len(w.buf), len(p))
		w.buf = append(w.buf, p[:take]...)
		p = p[take:]
		if len(w.buf) == bundleChunkSize {
			if err := w.flush(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (w *chunkWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	key := chunkKey(w.digest, len(w.chunks))
	if _, err := store.Put(w.ctx, w.s, BucketBundles, key, w.buf, store.AnyRevision); err != nil {
		return err
	}
	_, _ = w.hash.Write(w.buf)
	w.chunks = append(w.chunks, sha256Hex(w.buf))
	w.size += int64(len(w.buf))
	w.buf = w.buf[:0]
	return nil
}

// OpenBundle returns the bundle's archive from the shared store, read a
// chunk at a time; each chunk is checked against the manifest's digest
// before a byte of it is returned, and the whole archive's digest and
// size at its end. It wraps lifecycle.ErrBundleNotShared when the store
// has no (complete) copy.
func (r *Repo) OpenBundle(ctx context.Context, digest string) (io.Reader, error) {
	rec, err := r.s.Get(ctx, BucketBundles, digest)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("bundle %s: %w", digest, lifecycle.ErrBundleNotShared)
	}
	if err != nil {
		return nil, fmt.Errorf("shared bundle store: %w", err)
	}
	var m bundleManifest
	if err := json.Unmarshal(rec.Value, &m); err != nil {
		return nil, fmt.Errorf("bundle %s in the shared store: unreadable manifest: %w", digest, err)
	}
	if m.Version != bundleManifestVersion || m.Digest != digest || len(m.Chunks) == 0 {
		return nil, fmt.Errorf("bundle %s in the shared store: the manifest describes %q (format %d, %d chunks), not this bundle", digest, m.Digest, m.Version, len(m.Chunks))
	}
	return &chunkReader{ctx: ctx, s: r.s, m: m, hash: sha256.New()}, nil
}

// chunkReader reads an archive's chunks in order, verifying each.
type chunkReader struct {
	ctx  context.Context
	s    store.Store
	m    bundleManifest
	next int
	buf  *bytes.Reader
	read int64
	hash hash.Hash
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for c.buf == nil || c.buf.Len() == 0 {
		if c.next == len(c.m.Chunks) {
			return 0, c.end()
		}
		if err := c.load(); err != nil {
			return 0, err
		}
	}
	return c.buf.Read(p)
}

func (c *chunkReader) load() error {
	n := c.next
	rec, err := c.s.Get(c.ctx, BucketBundles, chunkKey(c.m.Digest, n))
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("bundle %s in the shared store: chunk %d of %d is missing", c.m.Digest, n+1, len(c.m.Chunks))
	}
	if err != nil {
		return fmt.Errorf("shared bundle store: %w", err)
	}
	if got := sha256Hex(rec.Value); got != c.m.Chunks[n] {
		return fmt.Errorf("bundle %s in the shared store: chunk %d of %d is corrupt (digest %s, want %s)", c.m.Digest, n+1, len(c.m.Chunks), got, c.m.Chunks[n])
	}
	_, _ = c.hash.Write(rec.Value)
	c.read += int64(len(rec.Value))
	c.buf = bytes.NewReader(rec.Value)
	c.next++
	return nil
}

// end checks the whole archive once every chunk was read.
func (c *chunkReader) end() error {
	if got := "sha256:" + hex.EncodeToString(c.hash.Sum(nil)); got != c.m.SHA256 || c.read != c.m.Size {
		return fmt.Errorf("bundle %s in the shared store: the archive is %d bytes with digest %s, want %d bytes with %s", c.m.Digest, c.read, got, c.m.Size, c.m.SHA256)
	}
	return io.EOF
}
