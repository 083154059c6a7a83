package dynamic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"carvel.dev/imgpkg/pkg/imgpkg/lockconfig"
	"github.com/blang/semver/v4"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"golang.org/x/sync/errgroup"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
)

// carvelDataAPI is the API of Carvel's Package and PackageMetadata.
const carvelDataAPI = "data.packaging.carvel.dev/v1alpha1"

// carvelPackagingAPI is how the VCF Services docs' own build output
// (filesystem-layout.md's config/.vcf/dependencies.yml, the example
// bundle's package.yml) writes a Package; kapp-controller serves Packages
// under both, so both are accepted for a Package.
const carvelPackagingAPI = "packaging.carvel.dev/v1alpha1"

// dnsSubdomain is a Kubernetes DNS subdomain name (RFC 1123).
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// packageManifestCheck validates spec.package and spec.packageMetadata as
// the Carvel Package and PackageMetadata kapp-controller will accept:
// apiVersion and kind, a refName of at least three DNS segments, a semver
// version, metadata.name <refName>.<version> when given, an imgpkgBundle
// to fetch, and a PackageMetadata named after the refName.
func packageManifestCheck(res *resource) *commonv1.Check {
	var problems []string
	refName, version, image := "", "", ""
	pkg, ok := obj(res.doc, "spec", "package")
	if !ok {
		problems = append(problems, "spec.package is missing or not an object")
	} else {
		problems = append(problems, kindProblems("spec.package", pkg, "Package")...)
		refName, _ = str(pkg, "spec", "refName")
		switch {
		case refName == "":
			problems = append(problems, "spec.package.spec.refName is required")
		case len(refName) > 253 || !dnsSubdomain.MatchString(refName) || strings.Count(refName, ".") < 2:
			problems = append(problems, fmt.Sprintf("spec.package.spec.refName %q must be a DNS subdomain of at least three segments (e.g. myservice.example.com)", refName))
			refName = ""
		}
		version, _ = str(pkg, "spec", "version")
		if version == "" {
			problems = append(problems, "spec.package.spec.version is required")
		} else if _, err := semver.Parse(version); err != nil {
			problems = append(problems, fmt.Sprintf("spec.package.spec.version %q is not semver: %v", version, err))
			version = ""
		}
		if n, _ := str(pkg, "metadata", "name"); n != "" && refName != "" && version != "" && n != refName+"."+version {
			problems = append(problems, fmt.Sprintf("spec.package.metadata.name %q must be <refName>.<version>: %s.%s", n, refName, version))
		}
		image = bundleImage(pkg)
		if image == "" {
			problems = append(problems, "spec.package.spec.template.spec.fetch has no imgpkgBundle.image to fetch")
		} else if _, err := name.ParseReference(image); err != nil {
			problems = append(problems, fmt.Sprintf("spec.package imgpkgBundle.image %q is not an image reference: %v", image, err))
		}
	}
	meta, ok := obj(res.doc, "spec", "packageMetadata")
	if !ok {
		problems = append(problems, "spec.packageMetadata is missing or not an object")
	} else {
		problems = append(problems, kindProblems("spec.packageMetadata", meta, "PackageMetadata")...)
		n, _ := str(meta, "metadata", "name")
		if n == "" {
			problems = append(problems, "spec.packageMetadata.metadata.name is required")
		} else if refName != "" && n != refName {
			problems = append(problems, fmt.Sprintf("spec.packageMetadata.metadata.name %q must equal the Package's refName %q", n, refName))
		}
	}
	if len(problems) > 0 {
		return failed(CheckPackageManifest, strings.Join(problems, "; "))
	}
	return passed(CheckPackageManifest, fmt.Sprintf("Package %s %s fetches %s and matches its PackageMetadata", refName, version, image))
}

func kindProblems(path string, doc map[string]any, kind string) []string {
	var out []string
	v, _ := str(doc, "apiVersion")
	switch {
	case v == carvelDataAPI:
	case v == carvelPackagingAPI && kind == "Package":
	case kind == "Package":
		out = append(out, fmt.Sprintf("%s.apiVersion is %q; want %s (or %s)", path, v, carvelDataAPI, carvelPackagingAPI))
	default:
		out = append(out, fmt.Sprintf("%s.apiVersion is %q; want %s", path, v, carvelDataAPI))
	}
	if v, _ := str(doc, "kind"); v != kind {
		out = append(out, fmt.Sprintf("%s.kind is %q; want %s", path, v, kind))
	}
	return out
}

// bundleImage is the first imgpkgBundle image the Package fetches.
func bundleImage(pkg map[string]any) string {
	v, _ := get(pkg, "spec", "template", "spec", "fetch")
	list, _ := v.([]any)
	for _, f := range list {
		m, _ := f.(map[string]any)
		if img, _ := str(m, "imgpkgBundle", "image"); img != "" {
			return img
		}
	}
	return ""
}

// imageCheck is ImageAvailability, the same for every SupervisorService
// of the run since it reads the bundle; computed once.
func (r *run) imageCheck(ctx context.Context) *commonv1.Check {
	if r.images == nil {
		r.images = r.c.imageAvailability(ctx, r.req.GetBundle())
	}
	return &commonv1.Check{Name: r.images.GetName(), Status: r.images.GetStatus(), Message: r.images.GetMessage()}
}

// registryLookups bounds the concurrent manifest look-ups of one run.
const registryLookups = 8

// imageAvailability checks that every image of .imgpkg/images.yml is
// carried in the bundle tarball or present, by digest, in the registry
// repository the bundle came from (where imgpkg copy relocates them).
// locateImage finds one image of the lock: in the bundle tarball, in the
// bundle's registry, or missing (with why).
func (c *Checker) locateImage(ctx context.Context, image string, bundled map[string]bool, repo *name.Repository) (inBundle, inRegistry bool, missing string) {
	d, err := name.NewDigest(image)
	if err != nil { // lockconfig validated the form already
		return false, false, fmt.Sprintf("%s (not a digest reference: %v)", image, err)
	}
	digest := d.DigestStr()
	switch {
	case bundled[digest]:
		return true, false, ""
	case repo == nil:
		return false, false, image + " (not carried in the bundle tarball, and the bundle has no registry to look in)"
	}
	found, err := c.inRegistry(ctx, repo.Digest(digest))
	switch {
	case err != nil:
		return false, false, fmt.Sprintf("%s (looking it up in %s failed: %v)", image, repo, err)
	case !found:
		return false, false, fmt.Sprintf("%s (not in the bundle tarball, and %s has no manifest %s)", image, repo, digest)
	}
	return false, true, ""
}

func (c *Checker) imageAvailability(ctx context.Context, b *precheckv1.BundleFacts) *commonv1.Check {
	if len(strings.TrimSpace(string(b.GetImagesLockYaml()))) == 0 {
		return failed(CheckImageAvailability, "the bundle has no .imgpkg/images.yml, so the images it needs cannot be verified")
	}
	lock, err := lockconfig.NewImagesLockFromBytes(b.GetImagesLockYaml())
	if err != nil {
		return failed(CheckImageAvailability, fmt.Sprintf(".imgpkg/images.yml is not a valid imgpkg ImagesLock: %v", err))
	}
	if len(lock.Images) == 0 {
		return passed(CheckImageAvailability, ".imgpkg/images.yml references no images")
	}
	bundled := map[string]bool{}
	for _, d := range b.GetBundledImageDigests() {
		if _, after, ok := strings.Cut(d, "@"); ok {
			d = after
		}
		bundled[d] = true
	}
	var repo *name.Repository
	if raw := strings.TrimPrefix(b.GetRegistryRepository(), "oci://"); raw != "" {
		ref, err := name.ParseReference(raw)
		if err != nil {
			return failed(CheckImageAvailability, fmt.Sprintf("registry repository %q is not a repository reference: %v", b.GetRegistryRepository(), err))
		}
		r := ref.Context()
		repo = &r
	}

	ctx, cancel := context.WithTimeout(ctx, c.registryTimeout)
	defer cancel()
	var (
		mu         sync.Mutex
		missing    = make([]string, len(lock.Images))
		inBundle   int
		inRegistry int
	)
	var g errgroup.Group
	g.SetLimit(registryLookups)
	for i, img := range lock.Images {
		g.Go(func() error {
			inB, inR, miss := c.locateImage(ctx, img.Image, bundled, repo)
			mu.Lock()
			defer mu.Unlock()
			if inB {
				inBundle++
			}
			if inR {
				inRegistry++
			}
			missing[i] = miss
			return nil
		})
	}
	_ = g.Wait()
	var gone []string
	for _, m := range missing {
		if m != "" {
			gone = append(gone, m)
		}
	}
	if len(gone) > 0 {
		return failed(CheckImageAvailability, fmt.Sprintf("%d of %d images of .imgpkg/images.yml are unavailable: %s", len(gone), len(lock.Images), strings.Join(gone, "; ")))
	}
	msg := fmt.Sprintf("all %d images of .imgpkg/images.yml are available: %d in the bundle tarball", len(lock.Images), inBundle)
	if repo != nil {
		msg += fmt.Sprintf(", %d in %s", inRegistry, repo)
	}
	return passed(CheckImageAvailability, msg)
}

// inRegistry HEADs the manifest; a 404 is "not found", not an error.
func (c *Checker) inRegistry(ctx context.Context, ref name.Digest) (bool, error) {
	_, err := remote.Head(ref, append([]remote.Option{remote.WithContext(ctx)}, c.registryOpts...)...)
	if err == nil {
		return true, nil
	}
	var terr *transport.Error
	if errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound {
		return false, nil
	}
	return false, err
}

// addRequested sums a SupervisorService's request into its Supervisor's.
func (r *run) addRequested(supervisor string, q *precheckv1.ResourceQuota) {
	t, ok := r.requested[supervisor]
	if !ok {
		t = &precheckv1.ResourceQuota{}
		r.requested[supervisor] = t
	}
	t.CpuMillicores += q.GetCpuMillicores()
	t.MemoryBytes += q.GetMemoryBytes()
	t.StorageBytes += q.GetStorageBytes()
}

// quotaCheck is ResourceQuota: what the SupervisorService requests, and
// what all SupervisorServices of the run request on the same Supervisor,
// must fit what that Supervisor has available.
func (r *run) quotaCheck(res *resource) *commonv1.Check {
	sup := res.supervisor()
	if sup == "" {
		return failed(CheckResourceQuota, "spec.supervisor is not set, so there is no Supervisor to check the quota on")
	}
	facts := r.supervisorFacts(sup)
	if facts == nil {
		return failed(CheckResourceQuota, fmt.Sprintf("Supervisor %s is not in the platform inventory", sup))
	}
	avail := facts.GetAvailable()
	if avail == nil {
		return failed(CheckResourceQuota, fmt.Sprintf("Supervisor %s reported no available quota", sup))
	}
	own := res.staged.GetRequested()
	total := r.requested[sup]
	var problems []string
	for _, d := range quotaDims {
		if d.get(own) > d.get(avail) {
			problems = append(problems, fmt.Sprintf("requests %s %s but Supervisor %s has %s available", d.name, d.format(d.get(own)), sup, d.format(d.get(avail))))
		} else if d.get(total) > d.get(avail) {
			problems = append(problems, fmt.Sprintf("the service's SupervisorServices on %s together request %s %s but %s is available", sup, d.name, d.format(d.get(total)), d.format(d.get(avail))))
		}
	}
	if len(problems) > 0 {
		return failed(CheckResourceQuota, strings.Join(problems, "; "))
	}
	return passed(CheckResourceQuota, fmt.Sprintf("requests %s; Supervisor %s has %s available", formatQuota(own), sup, formatQuota(avail)))
}

func (r *run) supervisorFacts(name string) *precheckv1.SupervisorFacts {
	for _, s := range r.req.GetPlatform().GetSupervisors() {
		if s.GetName() == name {
			return s
		}
	}
	return nil
}

type quotaDim struct {
	name   string
	get    func(*precheckv1.ResourceQuota) int64
	format func(int64) string
}

var quotaDims = []quotaDim{
	{"cpu", (*precheckv1.ResourceQuota).GetCpuMillicores, formatCPU},
	{"memory", (*precheckv1.ResourceQuota).GetMemoryBytes, formatBytes},
	{"storage", (*precheckv1.ResourceQuota).GetStorageBytes, formatBytes},
}

func formatQuota(q *precheckv1.ResourceQuota) string {
	parts := make([]string, len(quotaDims))
	for i, d := range quotaDims {
		parts[i] = d.name + " " + d.format(d.get(q))
	}
	return strings.Join(parts, ", ")
}

// formatCPU writes millicores as Kubernetes does: "500m", "2".
func formatCPU(m int64) string {
	if m%1000 == 0 {
		return fmt.Sprintf("%d", m/1000)
	}
	return fmt.Sprintf("%dm", m)
}

// formatBytes writes bytes in the largest exact binary unit: "512Mi".
func formatBytes(b int64) string {
	units := []string{"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"}
	for i, u := range units {
		size := int64(1) << (10 * (len(units) - i))
		if b != 0 && b%size == 0 {
			return fmt.Sprintf("%d%s", b/size, u)
		}
	}
	return fmt.Sprintf("%d", b)
}
