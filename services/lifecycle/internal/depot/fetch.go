package depot

import (
	"net/url"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// bundleConfigLabel marks an image as an imgpkg bundle (imgpkg's
// bundle.BundleConfigLabel); rootBundleLabel marks the bundle a tarball was
// made from (imgpkg copy --to-tar sets it on the root bundle only).
const (
	bundleConfigLabel = "dev.carvel.imgpkg.bundle"
	rootBundleLabel   = "dev.carvel.imgpkg.copy.root-bundle"
	maxBundleLayers   = 16
)

// imageSource is where a bundle image and the images it references come
// from: an imgpkg tarball on disk or an OCI registry.
type imageSource interface {
	// bundleImage is the imgpkg bundle image, its manifest digest verified.
	bundleImage() v1.Image
	// inspect finds which images.yml entries the source carries, the
	// signatures next to them and every image digest present.
	inspect(ctx context.Context, images []bundle.Image) (inspection, error)
	// readError classifies a failure to read bytes from the source.
	readError(what string, err error) error
}

type inspection struct {
	found      map[string]v1.Image // images.yml ref → image carried by the source (images only, not indexes)
	present    []string
	signatures []bundle.Signature
}

// reporter forwards progress, dropping repeats.
type reporter struct {
	fn        bundle.Progress
	step      string
	percent   int
	everFired bool
}

func (r *reporter) report(step string, percent int) {
	if r.fn == nil || (r.everFired && step == r.step && percent == r.percent) {
		return
	}
	r.step, r.percent, r.everFired = step, percent, true
	r.fn(step, percent)
}

// Fetch downloads (or pulls), verifies and extracts the bundle at source,
// and returns it. It is idempotent per digest: a bundle already in the store
// is reused without extracting it again. The whole call is bounded by
// Config.HTTPTimeout; cancelling ctx stops it promptly and leaves nothing
// behind.
func (f *Fetcher) Fetch(ctx context.Context, source string, progress bundle.Progress) (*bundle.Bundle, error) {
	ps, err := parseSource(source, f.cfg.AllowInsecure)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.HTTPTimeout)
	defer cancel()
	rep := &reporter{fn: progress}
	var b *bundle.Bundle
	switch ps.kind {
	case sourceTarball:
		b, err = f.fetchTarball(ctx, source, ps, rep)
	case sourceOCI:
		b, err = f.fetchOCI(ctx, source, ps, rep)
	}
	if err != nil {
		// The only place the source is named: what fails below says what
		// and where inside it, never the source again.
		return nil, fmt.Errorf("fetch %s: %w", redactSource(source), err)
	}
	rep.report(bundle.StepDone, 100)
	return b, nil
}

// pluginManifests finds the UI plugin manifest of each image the bundle
// carries (nil when there is none), in a scratch directory under stage.
func (f *Fetcher) pluginManifests(ctx context.Context, src imageSource, insp inspection, stage string, budget *byteBudget) (map[string][]byte, error) {
	scratch := filepath.Join(stage, "scratch")
	if err := os.Mkdir(scratch, 0o750); err != nil {
		return nil, err
	}
	manifests := map[string][]byte{}
	for _, ref := range sortedKeys(insp.found) {
		m, ok, err := f.findPluginManifest(ctx, src, insp.found[ref], scratch, budget)
		if err != nil {
			return nil, fmt.Errorf("inspect image %s: %w", ref, err)
		}
		if ok {
			manifests[ref] = m
		}
	}
	if err := os.RemoveAll(scratch); err != nil {
		return nil, err
	}
	if len(manifests) == 0 {
		return nil, nil
	}
	return manifests, nil
}

// reuse returns the stored bundle for digest, if there is one.
func (f *Fetcher) reuse(digest, source string) (*bundle.Bundle, bool, error) {
	b, err := f.Load(digest)
	if errors.Is(err, bundle.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	b.Source = source
	return b, true, nil
}

// install extracts and inspects a bundle from src into a staging directory
// and commits it to the store under digest.
func (f *Fetcher) install(ctx context.Context, src imageSource, digest, source, repository string, rep *reporter) (b *bundle.Bundle, err error) {
	stage, err := os.MkdirTemp(f.cfg.TempDir, tmpPrefixStage)
	if err != nil {
		return nil, fmt.Errorf("create staging directory: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = removeTree(stage)
		}
	}()
	tree := filepath.Join(stage, treeDir)
	if err := os.Mkdir(tree, 0o750); err != nil {
		return nil, err
	}
	budget := &byteBudget{remaining: f.limits.MaxDownloadBytes}
	if err := f.extractImage(ctx, src, tree, budget, rep); err != nil {
		return nil, err
	}
	b, err = openTree(tree)
	if err != nil {
		return nil, err
	}

	rep.report(bundle.StepInspecting, -1)
	insp, err := src.inspect(ctx, b.Images)
	if err != nil {
		return nil, err
	}
	manifests, err := f.pluginManifests(ctx, src, insp, stage, budget)
	if err != nil {
		return nil, err
	}
	sort.Strings(insp.present)
	sort.Slice(insp.signatures, func(i, j int) bool {
		a, c := insp.signatures[i], insp.signatures[j]
		if a.Digest != c.Digest {
			return a.Digest < c.Digest
		}
		return a.Tag < c.Tag
	})
	facts := storedFacts{
		Digest:              digest,
		Source:              source,
		RegistryRepository:  repository,
		BundledImageDigests: insp.present,
		PluginManifests:     manifests,
		Signatures:          insp.signatures,
	}
	if err := writeFacts(stage, facts); err != nil {
		return nil, err
	}
	if err := makeReadOnly(tree); err != nil {
		return nil, fmt.Errorf("seal bundle tree: %w", err)
	}
	if err := f.commit(stage, digest); err != nil {
		return nil, err
	}
	committed = true
	// Read it back from the store: what Fetch returns is exactly what Load
	// will return after a restart.
	b, _, err = f.reuse(digest, source)
	if err == nil && b == nil {
		err = fmt.Errorf("bundle %s vanished from the store right after it was stored", digest)
	}
	return b, err
}

// byteBudget bounds the blob bytes one Fetch reads (MaxDownloadBytes), by
// the sizes manifests declare; readers then refuse to go past a declared size.
type byteBudget struct{ remaining int64 }

func (b *byteBudget) take(n int64, what string) error {
	if n < 0 || n > b.remaining {
		return fmt.Errorf("%w: %s (%d bytes) takes the fetch past its download limit (MaxDownloadBytes)", bundle.ErrHostile, what, n)
	}
	b.remaining -= n
	return nil
}

// isTarLayer reports whether a layer media type carries a tar archive.
func isTarLayer(mt types.MediaType) bool {
	switch mt {
	case types.DockerLayer, types.OCILayer, types.DockerUncompressedLayer, types.OCIUncompressedLayer:
		return true
	}
	return false
}

// extractImage writes the bundle image's layers into dir.
func (f *Fetcher) extractImage(ctx context.Context, src imageSource, dir string, budget *byteBudget, rep *reporter) error {
	img := src.bundleImage()
	m, err := img.Manifest()
	if err != nil {
		return fmt.Errorf("%w: bundle image manifest: %w", bundle.ErrHostile, err)
	}
	if len(m.Layers) == 0 {
		return fmt.Errorf("%w: the bundle image has no layers", bundle.ErrHostile)
	}
	if len(m.Layers) > maxBundleLayers {
		return fmt.Errorf("%w: the bundle image has %d layers, more than the %d allowed", bundle.ErrHostile, len(m.Layers), maxBundleLayers)
	}
	var total int64
	for _, l := range m.Layers {
		if !isTarLayer(l.MediaType) {
			return fmt.Errorf("%w: bundle layer %s has media type %q; bundle layers must be tar archives", bundle.ErrHostile, l.Digest, l.MediaType)
		}
		if err := budget.take(l.Size, "bundle layer "+l.Digest.String()); err != nil {
			return err
		}
		total += l.Size
	}
	x, err := newExtractor(dir, f.limits)
	if err != nil {
		return err
	}
	defer func() { _ = x.Close() }()
	rep.report(bundle.StepExtracting, 0)
	var done int64
	onRead := func(n int64) {
		done += n
		if total > 0 {
			rep.report(bundle.StepExtracting, int(min(done*100/total, 99)))
		}
	}
	// Bytes of the uncompressed tar streams: the file contents are bounded by
	// MaxBundleBytes; headers and padding get generous room on top.
	streamLimit := f.limits.MaxBundleBytes + int64(f.limits.MaxFiles)*2048 + 8<<20
	for _, l := range m.Layers {
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			return src.readError(fmt.Sprintf("bundle layer %s", l.Digest), err)
		}
		err = f.extractLayer(ctx, src, layer, l, x, onRead, streamLimit)
		if err != nil {
			return err
		}
	}
	rep.report(bundle.StepExtracting, 100)
	return nil
}

func (f *Fetcher) extractLayer(ctx context.Context, src imageSource, layer v1.Layer, desc v1.Descriptor, x *extractor, onRead func(int64), streamLimit int64) error {
	return f.readLayer(ctx, src, layer, desc, layerLimits{
		what:        "bundle layer",
		onRead:      onRead,
		streamLimit: streamLimit,
		streamWhat:  "the uncompressed bundle layers (limit MaxBundleBytes)",
	}, func(r io.Reader, name string) error { return x.extractTar(ctx, r, name) })
}

// layerLimits bound one layer's streams and name them in errors.
type layerLimits struct {
	what        string // "bundle layer" or "layer"
	onRead      func(int64)
	streamLimit int64
	streamWhat  string
}

// readLayer streams one layer through consume and then drains and verifies
// it: the rest of the uncompressed stream is read (gzip checks its CRC only
// at the end), the decompressor closed, and the rest of the compressed
// stream read (the source checks the layer digest once the last byte went
// through). Extraction and the plugin scan both go through here, so a fix
// to the verification is made once.
func (f *Fetcher) readLayer(ctx context.Context, src imageSource, layer v1.Layer, desc v1.Descriptor, lim layerLimits, consume func(r io.Reader, name string) error) error {
	name := desc.Digest.String()
	rc, err := layer.Compressed()
	if err != nil {
		return src.readError(lim.what+" "+name, err)
	}
	defer func() { _ = rc.Close() }()
	compressed := &boundedReader{ctx: ctx, r: rc, limit: desc.Size, what: lim.what + " " + name + " (beyond its declared size)", onRead: lim.onRead}
	dr, closeDecompressor, err := decompressLayer(compressed, name)
	if err != nil {
		return f.classifyLayerError(ctx, src, compressed, name, err)
	}
	uncompressed := &boundedReader{ctx: ctx, r: dr, limit: lim.streamLimit, what: lim.streamWhat}
	err = consume(uncompressed, name)
	if err == nil {
		_, err = io.Copy(io.Discard, uncompressed)
		if err == nil {
			err = closeDecompressor()
		}
		if err == nil {
			_, err = io.Copy(io.Discard, compressed)
		}
		if err != nil {
			err = &layerReadError{layer: name, err: err}
		}
	}
	if err != nil {
		return f.classifyLayerError(ctx, src, compressed, name, err)
	}
	return nil
}

func (f *Fetcher) classifyLayerError(ctx context.Context, src imageSource, compressed *boundedReader, name string, err error) error {
	var lre *layerReadError
	switch {
	case ctx.Err() != nil:
		return classifyNetError(ctx, "bundle layer "+name, err)
	case errors.Is(err, bundle.ErrHostile):
		return err
	case compressed.readErr != nil:
		return src.readError("bundle layer "+name, compressed.readErr)
	case errors.As(err, &lre):
		return fmt.Errorf("%w: %s is not a valid tar archive: %w", bundle.ErrHostile, "bundle layer "+name, lre.err)
	default:
		return fmt.Errorf("extract bundle layer %s: %w", name, err)
	}
}

// redactSource is a source as errors name it: an https or http URL
// without credentials, query or fragment (pre-signed URLs carry tokens);
// oci:// references as given.
func redactSource(source string) string {
	u, err := url.Parse(source)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return source
	}
	return redactURL(u)
}
