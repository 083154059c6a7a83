package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

const maxConfigBytes = 4 << 20

// ociSource is a bundle image in an OCI registry, read with
// go-containerregistry's remote package (which verifies every blob and
// manifest against its digest).
type ociSource struct {
	ref    name.Reference
	bundle v1.Image
	digest string
	opts   []remote.Option
	// nameOpts carry AllowInsecure into references parsed from images.yml.
	nameOpts []name.Option
}

func (f *Fetcher) remoteOptions(ctx context.Context) []remote.Option {
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(f.transport),
		// Anonymous on purpose: no keychain lookups in the service's home
		// directory; bundles come from registries that serve them openly.
		remote.WithAuth(authn.Anonymous),
		remote.WithUserAgent("vcfsm-lifecycle"),
		remote.WithRetryBackoff(remote.Backoff{Duration: 250 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 3}),
	}
}

func (f *Fetcher) fetchOCI(ctx context.Context, source string, ps parsedSource, rep *reporter) (b *bundle.Bundle, err error) {
	defer recoverHostile(&err, "read OCI bundle")
	rep.report(bundle.StepDownloading, -1)
	src := &ociSource{ref: ps.ref, opts: f.remoteOptions(ctx)}
	if f.cfg.AllowInsecure {
		src.nameOpts = []name.Option{name.Insecure}
	}
	desc, err := remote.Get(ps.ref, src.opts...)
	if err != nil {
		return nil, registryError(ctx, "resolve", err)
	}
	switch {
	case desc.MediaType.IsIndex():
		return nil, fmt.Errorf("%w: not an imgpkg bundle: the reference is an image index", bundle.ErrHostile)
	case !desc.MediaType.IsImage():
		return nil, fmt.Errorf("%w: not an imgpkg bundle: its media type is %q", bundle.ErrHostile, desc.MediaType)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, registryError(ctx, "read the image", err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("%w: invalid manifest: %w", bundle.ErrHostile, err)
	}
	if m.Config.Size > maxConfigBytes {
		return nil, fmt.Errorf("%w: image config of %d bytes, more than the %d allowed", bundle.ErrHostile, m.Config.Size, maxConfigBytes)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, registryError(ctx, "read the image config", err)
	}
	if _, ok := cfg.Config.Labels[bundleConfigLabel]; !ok {
		return nil, fmt.Errorf("%w: not an imgpkg bundle: no %s label in its config (push it with imgpkg push -b)", bundle.ErrHostile, bundleConfigLabel)
	}
	src.bundle, src.digest = img, desc.Digest.String()
	if b, ok, err := f.reuse(src.digest, source); err != nil || ok {
		return b, err
	}
	return f.install(ctx, src, src.digest, source, ps.ref.Context().Name(), rep)
}

func (s *ociSource) bundleImage() v1.Image { return s.bundle }

func (s *ociSource) readError(what string, err error) error {
	return fmt.Errorf("%w: registry %s: %s: %w", bundle.ErrFetch, s.ref.Context().RegistryStr(), what, err)
}

// inspect resolves images.yml entries in the source registry: first where
// imgpkg copy relocates them (the bundle's repository, same digest), then at
// their original reference when that is on the same registry. Images on
// other registries are not contacted: "bundled" means reachable where the
// bundle came from.
func (s *ociSource) inspect(ctx context.Context, images []bundle.Image) (inspection, error) {
	insp := inspection{found: map[string]v1.Image{}}
	present := map[string]bool{s.digest: true}
	type signedImage struct {
		repo   name.Repository
		digest string
	}
	check := []signedImage{{s.ref.Context(), s.digest}}
	bundleRepo := s.ref.Context()
	for _, im := range images {
		orig, err := name.NewDigest(im.Image, s.nameOpts...)
		if err != nil {
			continue
		}
		candidates := []name.Digest{bundleRepo.Digest(orig.DigestStr())}
		if orig.Context().RegistryStr() == bundleRepo.RegistryStr() && orig.Context().Name() != bundleRepo.Name() {
			candidates = append(candidates, orig.Context().Digest(orig.DigestStr()))
		}
		for _, c := range candidates {
			desc, err := remote.Get(c, s.opts...)
			if isRegistryNotFound(err) {
				continue
			}
			if err != nil {
				return inspection{}, registryError(ctx, "resolve "+c.String(), err)
			}
			present[desc.Digest.String()] = true
			if desc.MediaType.IsImage() {
				img, err := desc.Image()
				if err != nil {
					return inspection{}, registryError(ctx, "read "+c.String(), err)
				}
				insp.found[im.Image] = img
			}
			check = append(check, signedImage{c.Context(), desc.Digest.String()})
			break
		}
	}
	for _, si := range check {
		tag := "sha256-" + strings.TrimPrefix(si.digest, "sha256:") + ".sig"
		ref := si.repo.Tag(tag)
		desc, err := remote.Get(ref, s.opts...)
		if isRegistryNotFound(err) {
			continue
		}
		if err != nil {
			return inspection{}, registryError(ctx, "resolve "+ref.String(), err)
		}
		if !desc.MediaType.IsImage() {
			continue
		}
		img, err := desc.Image()
		if err != nil {
			return inspection{}, registryError(ctx, "read "+ref.String(), err)
		}
		sig, err := readSignature(img, si.digest, tag, desc.Digest.String(), s)
		if err != nil {
			return inspection{}, err
		}
		insp.signatures = append(insp.signatures, sig)
		present[desc.Digest.String()] = true
	}
	insp.present = sortedKeys(present)
	return insp, nil
}

func isRegistryNotFound(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return false
	}
	if terr.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range terr.Errors {
		switch d.Code {
		case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode:
			return true
		}
	}
	return false
}

func registryError(ctx context.Context, what string, err error) error {
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode != 0 {
		return fmt.Errorf("%w: %s: registry answered %d %s: %w", bundle.ErrFetch, what, terr.StatusCode, http.StatusText(terr.StatusCode), err)
	}
	return classifyNetError(ctx, what, err)
}
