package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const (
	pluginManifestName     = "manifest.json"
	maxPluginManifestBytes = 1 << 20
	maxPluginLayers        = 128
)

// pluginHit is a manifest.json found in an image, with how deep it was, so
// the shallowest one wins (a plugin's own manifest sits at its root; deeper
// ones belong to vendored dependencies).
type pluginHit struct {
	content []byte
	depth   int
}

func (h *pluginHit) offer(content []byte, depth int) {
	if h.content == nil || depth < h.depth {
		h.content, h.depth = content, depth
	}
}

// findPluginManifest looks for a UI plugin manifest.json in the layers of
// img: directly as a file, or inside a .zip file in a layer (how UI plugin
// images ship their plugin). A manifest.json directly in a layer wins over
// one inside a zip.
func (f *Fetcher) findPluginManifest(ctx context.Context, src imageSource, img v1.Image, scratch string, budget *byteBudget) ([]byte, bool, error) {
	m, err := img.Manifest()
	if err != nil {
		return nil, false, src.readError("image manifest", err)
	}
	if len(m.Layers) > maxPluginLayers {
		return nil, false, fmt.Errorf("%w: image has %d layers, more than the %d inspected", bundle.ErrHostile, len(m.Layers), maxPluginLayers)
	}
	var direct, zipped pluginHit
	for _, l := range m.Layers {
		if !isTarLayer(l.MediaType) {
			continue
		}
		if err := budget.take(l.Size, "layer "+l.Digest.String()); err != nil {
			return nil, false, err
		}
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			return nil, false, src.readError("layer "+l.Digest.String(), err)
		}
		if err := f.scanLayer(ctx, src, layer, l, scratch, &direct, &zipped); err != nil {
			return nil, false, err
		}
	}
	switch {
	case direct.content != nil:
		return direct.content, true, nil
	case zipped.content != nil:
		return zipped.content, true, nil
	}
	return nil, false, nil
}

func (f *Fetcher) scanLayer(ctx context.Context, src imageSource, layer v1.Layer, desc v1.Descriptor, scratch string, direct, zipped *pluginHit) error {
	return f.readLayer(ctx, src, layer, desc, layerLimits{
		what:        "layer",
		streamLimit: f.limits.MaxDownloadBytes,
		streamWhat:  "uncompressed layer " + desc.Digest.String() + " (limit MaxDownloadBytes)",
	}, func(r io.Reader, name string) error {
		return scanTar(ctx, r, name, scratch, f.limits.MaxDownloadBytes, direct, zipped)
	})
}

// scanTar looks through one layer (with the bundle's own entry-name rule:
// walkTar) for manifest.json files and zips holding one. Entries of other
// types are passed over: a plugin image is a container image, not a
// bundle tree, and nothing of it is written out.
func scanTar(ctx context.Context, r io.Reader, layer, scratch string, maxZip int64, direct, zipped *pluginHit) error {
	return walkTar(ctx, r, layer, func(hdr *tar.Header, name string, tr *tar.Reader) error {
		if !isRegular(hdr) {
			return nil
		}
		depth := strings.Count(name, "/")
		switch {
		case path.Base(name) == pluginManifestName:
			content, err := readManifest(tr, hdr.Size)
			if err != nil {
				return &layerReadError{layer: layer, err: err}
			}
			if content != nil {
				direct.offer(content, depth)
			}
		case strings.HasSuffix(strings.ToLower(name), ".zip") && hdr.Size <= maxZip:
			content, err := manifestFromZip(tr, hdr.Size, scratch, layer)
			if err != nil {
				return err
			}
			if content != nil {
				zipped.offer(content.content, depth+1+content.depth)
			}
		}
		return nil
	})
}

// readManifest reads a candidate manifest.json; it returns nil when the file
// is too big or not a JSON object, i.e. not a plugin manifest.
func readManifest(r io.Reader, size int64) ([]byte, error) {
	if size > maxPluginManifestBytes {
		return nil, nil
	}
	content, err := io.ReadAll(io.LimitReader(r, maxPluginManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(content) > maxPluginManifestBytes || !isJSONObject(content) {
		return nil, nil
	}
	return content, nil
}

func isJSONObject(b []byte) bool {
	t := bytes.TrimSpace(b)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// manifestFromZip spools a zip from a layer to a scratch file (zip needs
// random access; memory is not the place for an archive of unknown size) and
// returns its shallowest manifest.json.
func manifestFromZip(r io.Reader, size int64, scratch, layer string) (*pluginHit, error) {
	tmp, err := os.CreateTemp(scratch, "plugin-*.zip")
	if err != nil {
		return nil, err
	}
	defer func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
	}()
	n, err := io.Copy(tmp, io.LimitReader(r, size))
	if err != nil {
		return nil, &layerReadError{layer: layer, err: err}
	}
	zr, err := zip.NewReader(tmp, n)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, nil // not a zip after all: no manifest in it
	}
	var hit pluginHit
	for _, zf := range zr.File {
		// The archive's own entry-name rule holds inside its zips too.
		clean, err := cleanEntryName(zf.Name)
		if err != nil {
			return nil, hostile("layer %s: zip entry %q: %v", layer, truncate(zf.Name, 200), err)
		}
		if path.Base(clean) != pluginManifestName || zf.FileInfo().IsDir() || zf.UncompressedSize64 > maxPluginManifestBytes {
			continue
		}
		depth := strings.Count(clean, "/")
		if hit.content != nil && depth >= hit.depth {
			continue
		}
		rc, err := zf.Open()
		if err != nil {
			continue
		}
		content, err := readManifest(rc, int64(zf.UncompressedSize64))
		_ = rc.Close()
		if err == nil && content != nil {
			hit.offer(content, depth)
		}
	}
	if hit.content == nil {
		return nil, nil
	}
	return &hit, nil
}
