package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"

	"carvel.dev/imgpkg/pkg/imgpkg/imagetar"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Bounds on the imgpkg tarball's own structure (not the bundle's content).
const (
	maxTarEntries       = 1 << 16
	maxTarManifestBytes = 32 << 20 // manifest.json: every image's manifest and config, inline
	maxTarImages        = 4096
	maxSignatureLayers  = 64
	maxSignaturePayload = 1 << 20
	cosignPayloadType   = types.MediaType("application/vnd.dev.cosign.simplesigning.v1+json")
)

// sigTagRe matches cosign signature tags: sha256-<hex of the signed digest>.sig.
var sigTagRe = regexp.MustCompile(`^sha256-([0-9a-f]{64})\.sig$`)

type tarEntry struct {
	digest string
	image  v1.Image // nil for image indexes
	labels map[string]string
	tag    string
}

// tarSource is an imgpkg tarball (imgpkg copy --to-tar) read with imgpkg's
// own imagetar reader. Every manifest digest is recomputed: imgpkg takes the
// digests in the tarball's manifest.json on trust.
type tarSource struct {
	bundle   v1.Image
	digest   string
	entries  []*tarEntry
	byDigest map[string]*tarEntry
}

func (f *Fetcher) fetchTarball(ctx context.Context, source string, ps parsedSource, rep *reporter) (b *bundle.Bundle, err error) {
	defer recoverHostile(&err, "read imgpkg tarball")
	path, err := f.download(ctx, ps.url, rep)
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.Remove(path) }()
	src, err := openImgpkgTar(path)
	if err != nil {
		return nil, err
	}
	if b, ok, err := f.reuse(src.digest, source); err != nil || ok {
		return b, err
	}
	return f.install(ctx, src, src.digest, source, "", rep)
}

// prescanTar checks the outer tar before imgpkg reads it: imgpkg loads
// manifest.json whole, so its size must be bounded first.
func prescanTar(path string) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = file.Close() }()
	tr := tar.NewReader(file)
	manifests := 0
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: not an imgpkg tarball: not a valid tar archive: %w", bundle.ErrHostile, err)
		}
		if n >= maxTarEntries {
			return fmt.Errorf("%w: not an imgpkg tarball: more than %d entries", bundle.ErrHostile, maxTarEntries)
		}
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeRegA, tar.TypeDir: //nolint:staticcheck // old writers
		default:
			return fmt.Errorf("%w: not an imgpkg tarball: entry %q has tar type %q (imgpkg tarballs only hold regular files)", bundle.ErrHostile, truncate(hdr.Name, 200), string(hdr.Typeflag))
		}
		if hdr.Name == "manifest.json" {
			manifests++
			if hdr.Size > maxTarManifestBytes {
				return fmt.Errorf("%w: imgpkg tarball manifest.json is %d bytes, more than the %d allowed", bundle.ErrHostile, hdr.Size, maxTarManifestBytes)
			}
		}
	}
	if manifests != 1 {
		return fmt.Errorf("%w: not an imgpkg tarball: want exactly one manifest.json, found %d (make it with imgpkg copy -b … --to-tar)", bundle.ErrHostile, manifests)
	}
	return nil
}

func sha256Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func openImgpkgTar(path string) (*tarSource, error) {
	if err := prescanTar(path); err != nil {
		return nil, err
	}
	items, err := imagetar.NewTarReader(path, 1).Read()
	if err != nil {
		return nil, fmt.Errorf("%w: not an imgpkg tarball: %w", bundle.ErrHostile, err)
	}
	if len(items) > maxTarImages {
		return nil, fmt.Errorf("%w: the tarball holds %d images, more than the %d allowed", bundle.ErrHostile, len(items), maxTarImages)
	}
	src := &tarSource{byDigest: map[string]*tarEntry{}}
	add := func(e *tarEntry) {
		if _, dup := src.byDigest[e.digest]; !dup {
			src.byDigest[e.digest] = e
			src.entries = append(src.entries, e)
		}
	}
	for _, it := range items {
		switch {
		case it.Image != nil:
			img := *it.Image
			d, err := verifiedImageDigest(img)
			if err != nil {
				return nil, err
			}
			add(&tarEntry{digest: d, image: img, labels: it.Labels, tag: img.Tag()})
		case it.Index != nil:
			idx := *it.Index
			raw, err := idx.RawManifest()
			if err != nil {
				return nil, fmt.Errorf("%w: image index %s: %w", bundle.ErrHostile, idx.Ref(), err)
			}
			if err := checkDigest(idx.Ref(), raw, idx.Digest); err != nil {
				return nil, err
			}
			add(&tarEntry{digest: sha256Digest(raw), labels: it.Labels, tag: idx.Tag()})
		}
	}
	root, err := src.findRoot()
	if err != nil {
		return nil, err
	}
	src.bundle, src.digest = root.image, root.digest
	return src, nil
}

func checkDigest(ref string, raw []byte, claimed func() (v1.Hash, error)) error {
	h, err := claimed()
	if err != nil {
		return fmt.Errorf("%w: %s: invalid digest: %w", bundle.ErrHostile, ref, err)
	}
	if actual := sha256Digest(raw); h.String() != actual {
		return fmt.Errorf("%w: %s: the manifest does not match its digest (claimed %s, actual %s)", bundle.ErrHostile, ref, h, actual)
	}
	return nil
}

// verifiedImageDigest recomputes an image's manifest digest and checks its
// config blob against the manifest, so labels read from it can be trusted.
func verifiedImageDigest(img v1.Image) (string, error) {
	ref := "image"
	if r, ok := img.(interface{ Ref() string }); ok {
		ref = r.Ref()
	}
	raw, err := img.RawManifest()
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", bundle.ErrHostile, ref, err)
	}
	if err := checkDigest(ref, raw, img.Digest); err != nil {
		return "", err
	}
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return "", fmt.Errorf("%w: %s: invalid manifest: %w", bundle.ErrHostile, ref, err)
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return "", fmt.Errorf("%w: %s: config: %w", bundle.ErrHostile, ref, err)
	}
	if actual := sha256Digest(cfg); m.Config.Digest.String() != actual {
		return "", fmt.Errorf("%w: %s: the config does not match its digest (manifest says %s, actual %s)", bundle.ErrHostile, ref, m.Config.Digest, actual)
	}
	return sha256Digest(raw), nil
}

func (s *tarSource) findRoot() (*tarEntry, error) {
	var roots []*tarEntry
	for _, e := range s.entries {
		if _, ok := e.labels[rootBundleLabel]; ok {
			roots = append(roots, e)
		}
	}
	if len(roots) == 0 {
		// Not made by imgpkg copy -b: accept a tarball holding a single bundle.
		for _, e := range s.entries {
			if e.image != nil && !sigTagRe.MatchString(e.tag) && isBundleImage(e.image) {
				roots = append(roots, e)
			}
		}
		if len(roots) == 0 {
			return nil, fmt.Errorf("%w: not an imgpkg bundle: the tarball holds no image labelled %s (was it made with imgpkg copy -i instead of -b?)", bundle.ErrHostile, bundleConfigLabel)
		}
	}
	if len(roots) > 1 {
		return nil, fmt.Errorf("%w: the tarball holds %d candidate root bundles; expected one", bundle.ErrHostile, len(roots))
	}
	root := roots[0]
	if root.image == nil {
		return nil, fmt.Errorf("%w: not an imgpkg bundle: the root image %s is an image index", bundle.ErrHostile, root.digest)
	}
	if !isBundleImage(root.image) {
		return nil, fmt.Errorf("%w: not an imgpkg bundle: image %s has no %s label in its config", bundle.ErrHostile, root.digest, bundleConfigLabel)
	}
	return root, nil
}

func isBundleImage(img v1.Image) bool {
	cfg, err := img.ConfigFile()
	if err != nil || cfg == nil {
		return false
	}
	_, ok := cfg.Config.Labels[bundleConfigLabel]
	return ok
}

func (s *tarSource) bundleImage() v1.Image { return s.bundle }

func (s *tarSource) readError(what string, err error) error {
	return fmt.Errorf("%w: the tarball is corrupt: %s: %w", bundle.ErrHostile, what, err)
}

func (s *tarSource) inspect(ctx context.Context, images []bundle.Image) (inspection, error) {
	insp := inspection{found: map[string]v1.Image{}}
	for _, im := range images {
		d, err := name.NewDigest(im.Image)
		if err != nil {
			continue // lockconfig validated these; nothing to find otherwise
		}
		if e := s.byDigest[d.DigestStr()]; e != nil && e.image != nil {
			insp.found[im.Image] = e.image
		}
	}
	for _, e := range s.entries {
		insp.present = append(insp.present, e.digest)
		if e.image == nil {
			continue
		}
		m := sigTagRe.FindStringSubmatch(e.tag)
		if m == nil {
			continue
		}
		if err := ctx.Err(); err != nil {
			return inspection{}, err
		}
		sig, err := readSignature(e.image, "sha256:"+m[1], e.tag, e.digest, s)
		if err != nil {
			return inspection{}, err
		}
		insp.signatures = append(insp.signatures, sig)
	}
	return insp, nil
}

// readSignature reads the simple-signing payloads of a cosign signature image.
func readSignature(img v1.Image, signed, tag, sigDigest string, src imageSource) (bundle.Signature, error) {
	m, err := img.Manifest()
	if err != nil {
		return bundle.Signature{}, src.readError("signature "+tag, err)
	}
	if len(m.Layers) > maxSignatureLayers {
		return bundle.Signature{}, fmt.Errorf("%w: signature %s has %d layers, more than the %d allowed", bundle.ErrHostile, tag, len(m.Layers), maxSignatureLayers)
	}
	sig := bundle.Signature{Digest: signed, Tag: tag, SignatureImage: sigDigest}
	for _, l := range m.Layers {
		if l.MediaType != cosignPayloadType {
			continue
		}
		if l.Size > maxSignaturePayload {
			return bundle.Signature{}, fmt.Errorf("%w: signature %s: payload of %d bytes, more than the %d allowed", bundle.ErrHostile, tag, l.Size, maxSignaturePayload)
		}
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			return bundle.Signature{}, src.readError("signature "+tag, err)
		}
		rc, err := layer.Compressed()
		if err != nil {
			return bundle.Signature{}, src.readError("signature "+tag, err)
		}
		// Reading to EOF is what makes the source verify the blob digest.
		payload, err := io.ReadAll(io.LimitReader(rc, maxSignaturePayload+1))
		_ = rc.Close()
		if err != nil {
			return bundle.Signature{}, src.readError("signature "+tag, err)
		}
		if int64(len(payload)) > maxSignaturePayload {
			return bundle.Signature{}, fmt.Errorf("%w: signature %s: payload larger than %d bytes", bundle.ErrHostile, tag, maxSignaturePayload)
		}
		sig.Payloads = append(sig.Payloads, payload)
		sig.Annotations = append(sig.Annotations, l.Annotations)
	}
	return sig, nil
}
