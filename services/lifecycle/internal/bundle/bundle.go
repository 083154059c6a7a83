// Package bundle holds what a VCF Service bundle is once fetched: the
// extracted tree, the parsed package documents, its images and signatures,
// and the errors a fetch reports. These are values: the domain model and
// the steps name them without depending on how bundles are downloaded and
// unpacked (internal/depot does that).
package bundle

import "errors"

// Sentinel errors. Every error the package returns wraps exactly one of
// them (or a context error) with a message saying what was wrong and where.
var (
	ErrInvalidSource  = errors.New("invalid bundle source")  // bad scheme/pattern, http:// without AllowInsecure
	ErrFetch          = errors.New("bundle download failed") // network, HTTP status, TLS, registry errors
	ErrHostile        = errors.New("bundle rejected")        // traversal, links, limits, not an imgpkg bundle, corrupt tar
	ErrInvalidPackage = errors.New("invalid package")        // package.yml missing/unparseable/no Package document
	ErrNotFound       = errors.New("bundle not in store")    // Load of a digest that is not stored
)

// Progress receives coarse progress of a Fetch, always from the goroutine
// that called Fetch: e.g. ("downloading", 42), ("extracting", 100); percent
// is -1 when unknown. Consecutive identical reports are suppressed.
type Progress func(step string, percent int)

// Progress steps, in the order a Fetch goes through them.
const (
	StepDownloading = "downloading" // tarball bytes, or registry manifest resolution
	StepExtracting  = "extracting"  // bundle layer(s) into the store (percent of compressed layer bytes)
	StepInspecting  = "inspecting"  // images.yml, signatures, UI plugin manifests
	StepDone        = "done"        // the bundle is in the store (also reported when it already was)
)

// Bundle is a fetched, extracted and parsed bundle. It is a value: callers
// may keep it; the tree under Dir must be treated as read-only.
type Bundle struct {
	Digest              string            // "sha256:<hex>" of the imgpkg bundle image (manifest digest)
	Source              string            // the source of the Fetch that returned it ("" from Load unless stored)
	Dir                 string            // the extracted tree (read-only after Fetch)
	Files               []File            // every regular file of the tree except .imgpkg/, forward-slash paths, sorted
	PackageFile         []byte            // package.yml as shipped
	PackageYAML         []byte            // the Package document alone, verbatim (GET /package)
	Package             Package           // parsed Package (+ PackageMetadata names)
	Metadata            map[string]any    // the PackageMetadata document as a JSON-compatible object; nil when absent
	ImagesLock          []byte            // .imgpkg/images.yml as shipped
	Images              []Image           // parsed ImagesLock entries (image refs normalised by imgpkg)
	BundledImageDigests []string          // digests of every image present in the tarball (or resolvable in the source registry at fetch time), sorted
	RegistryRepository  string            // for oci:// sources: the repository the bundle came from ("" for tarballs)
	PluginManifests     map[string][]byte // ImagesLock image ref → UI plugin manifest.json found in that image's layers
	Signatures          []Signature       // cosign signatures carried with the bundle, sorted by Digest then Tag
}

// File is one regular file of the bundle tree.
type File struct {
	Path    string // relative to the bundle root, forward slashes
	Content []byte
}

// Image is one entry of .imgpkg/images.yml.
type Image struct {
	Image       string
	Annotations map[string]string
}

// Signature is a cosign signature image found next to the bundle (imgpkg
// copy --cosign-signatures carries them as images tagged sha256-<hex>.sig).
// We record what is there; we do NOT verify it: no trust roots are
// configured, so "signed" means "a signature image is present", nothing more.
type Signature struct {
	Digest         string              // the digest the signature is for ("sha256:<hex>", from the tag)
	Tag            string              // "sha256-<hex>.sig"
	Payloads       [][]byte            // raw simple-signing payloads, one per signature layer
	SignatureImage string              // digest of the signature image itself
	Annotations    []map[string]string // per payload: the layer annotations (cosign signature, certificate, chain)
}

// Package is what the lifecycle service needs from package.yml.
type Package struct {
	Name                         string            // Package metadata.name
	RefName                      string            // spec.refName
	Version                      string            // spec.version ("" when the build left it empty)
	Annotations                  map[string]string // metadata.annotations (constraints, pre-check hook routing)
	KubernetesVersionConstraints string            // spec.kubernetesVersionSelection.constraints
	ValuesSchema                 map[string]any    // spec.valuesSchema.openAPIv3
	ProviderName, DisplayName    string            // from PackageMetadata when present
}

// Signed reports whether a signature image for the bundle's own digest came
// with it (presence only, see Signature).
func (b *Bundle) Signed() bool {
	for _, s := range b.Signatures {
		if s.Digest == b.Digest {
			return true
		}
	}
	return false
}
