package dynamic

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
)

// pkgOf is spec.package of a parsed SupervisorService.
func pkgOf(m map[string]any) map[string]any { return spec(m)["package"].(map[string]any) }

func pkgSpec(m map[string]any) map[string]any { return pkgOf(m)["spec"].(map[string]any) }

func TestPackageManifest(t *testing.T) {
	tests := []struct {
		name   string
		change func(m map[string]any)
		status string
		msg    string
	}{
		{name: "a Package kapp-controller accepts", change: func(map[string]any) {},
			status: StatusPassed, msg: "Package arcturus.example.com 2.11.1 fetches registry.example.com/arcturus/bundle@sha256:8d2f5e4f5cbc5b0b6f3e8d5d4e1c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c and matches its PackageMetadata"},
		{name: "Package of the wrong API", change: func(m map[string]any) { pkgOf(m)["apiVersion"] = "kappctrl.k14s.io/v1alpha1" },
			status: StatusFailed, msg: `spec.package.apiVersion is "kappctrl.k14s.io/v1alpha1"; want data.packaging.carvel.dev/v1alpha1 (or packaging.carvel.dev/v1alpha1)`},
		// The docs' build output (dependencies.yml, the example package.yml)
		// writes Packages under packaging.carvel.dev.
		{name: "Package as the docs write it", change: func(m map[string]any) { pkgOf(m)["apiVersion"] = "packaging.carvel.dev/v1alpha1" },
			status: StatusPassed, msg: "Package arcturus.example.com 2.11.1 fetches registry.example.com/arcturus/bundle@sha256:8d2f5e4f5cbc5b0b6f3e8d5d4e1c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c and matches its PackageMetadata"},
		{name: "PackageMetadata of the packaging API", change: func(m map[string]any) {
			meta := m["spec"].(map[string]any)["packageMetadata"].(map[string]any)
			meta["apiVersion"] = "packaging.carvel.dev/v1alpha1"
		}, status: StatusFailed, msg: `spec.packageMetadata.apiVersion is "packaging.carvel.dev/v1alpha1"; want data.packaging.carvel.dev/v1alpha1`},
		{name: "Package of the wrong kind", change: func(m map[string]any) { pkgOf(m)["kind"] = "PackageInstall" },
			status: StatusFailed, msg: `spec.package.kind is "PackageInstall"; want Package`},
		{name: "no refName", change: func(m map[string]any) { delete(pkgSpec(m), "refName") },
			status: StatusFailed, msg: "spec.package.spec.refName is required"},
		{name: "refName of two segments", change: func(m map[string]any) {
			pkgSpec(m)["refName"] = "arcturus.com"
			delete(pkgOf(m), "metadata")
		},
			status: StatusFailed, msg: `spec.package.spec.refName "arcturus.com" must be a DNS subdomain of at least three segments (e.g. myservice.example.com)`},
		{name: "version not semver", change: func(m map[string]any) { pkgSpec(m)["version"] = "9.1.0.0" },
			status: StatusFailed, msg: `spec.package.spec.version "9.1.0.0" is not semver`},
		{name: "no version", change: func(m map[string]any) { delete(pkgSpec(m), "version") },
			status: StatusFailed, msg: "spec.package.spec.version is required"},
		{name: "metadata.name is not refName.version", change: func(m map[string]any) {
			pkgOf(m)["metadata"] = map[string]any{"name": "arcturus.example.com"}
		},
			status: StatusFailed, msg: `spec.package.metadata.name "arcturus.example.com" must be <refName>.<version>: arcturus.example.com.2.11.1`},
		{name: "nothing to fetch", change: func(m map[string]any) {
			pkgSpec(m)["template"] = map[string]any{"spec": map[string]any{"fetch": []any{map[string]any{"git": map[string]any{"url": "x"}}}}}
		},
			status: StatusFailed, msg: "spec.package.spec.template.spec.fetch has no imgpkgBundle.image to fetch"},
		{name: "bundle image not a reference", change: func(m map[string]any) {
			pkgSpec(m)["template"] = map[string]any{"spec": map[string]any{"fetch": []any{map[string]any{"imgpkgBundle": map[string]any{"image": "Not A Ref"}}}}}
		},
			status: StatusFailed, msg: `spec.package imgpkgBundle.image "Not A Ref" is not an image reference`},
		{name: "PackageMetadata named otherwise", change: func(m map[string]any) {
			spec(m)["packageMetadata"].(map[string]any)["metadata"] = map[string]any{"name": "other.example.com"}
		},
			status: StatusFailed, msg: `spec.packageMetadata.metadata.name "other.example.com" must equal the Package's refName "arcturus.example.com"`},
		{name: "PackageMetadata of the wrong kind", change: func(m map[string]any) { spec(m)["packageMetadata"].(map[string]any)["kind"] = "Package" },
			status: StatusFailed, msg: `spec.packageMetadata.kind is "Package"; want PackageMetadata`},
		{name: "no PackageMetadata", change: func(m map[string]any) { delete(spec(m), "packageMetadata") },
			status: StatusFailed, msg: "spec.packageMetadata is missing or not an object"},
		{name: "no Package", change: func(m map[string]any) { delete(spec(m), "package") },
			status: StatusFailed, msg: "spec.package is missing or not an object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := edit(t, fixture(t, "SupervisorService"), tc.change)
			c := check(runChecks(t, request(t, doc{yaml: y})), 0, CheckPackageManifest)
			require.Equal(t, tc.status, c.GetStatus(), c.GetMessage())
			if tc.status == StatusPassed {
				require.Equal(t, tc.msg, c.GetMessage())
			} else {
				require.Contains(t, c.GetMessage(), tc.msg)
			}
		})
	}
}

func TestResourceQuota(t *testing.T) {
	q := func(cpu, mem, storage int64) *precheckv1.ResourceQuota {
		return &precheckv1.ResourceQuota{CpuMillicores: cpu, MemoryBytes: mem, StorageBytes: storage}
	}
	staged := func(r *precheckv1.ResourceQuota) *precheckv1.StagedResource {
		return &precheckv1.StagedResource{Target: testSupervisor, Reachable: true, Requested: r}
	}
	tests := []struct {
		name     string
		requests []*precheckv1.ResourceQuota // one SupervisorService each
		platform func(p *precheckv1.PlatformFacts)
		status   []string
		msg      string // of the last resource; contained
	}{
		{name: "fits", requests: []*precheckv1.ResourceQuota{q(500, 512<<20, 10<<30)},
			status: []string{StatusPassed}, msg: "requests cpu 500m, memory 512Mi, storage 10Gi; Supervisor supervisor-vc1 has cpu 4, memory 8Gi, storage 100Gi available"},
		{name: "fits exactly", requests: []*precheckv1.ResourceQuota{q(4000, 8<<30, 100<<30)},
			status: []string{StatusPassed}, msg: "requests cpu 4, memory 8Gi, storage 100Gi"},
		{name: "too much cpu", requests: []*precheckv1.ResourceQuota{q(4500, 1<<30, 1<<30)},
			status: []string{StatusFailed}, msg: "requests cpu 4500m but Supervisor supervisor-vc1 has 4 available"},
		{name: "too much memory", requests: []*precheckv1.ResourceQuota{q(100, 9<<30, 1<<30)},
			status: []string{StatusFailed}, msg: "requests memory 9Gi but Supervisor supervisor-vc1 has 8Gi available"},
		{name: "too much storage", requests: []*precheckv1.ResourceQuota{q(100, 1<<30, 200<<30)},
			status: []string{StatusFailed}, msg: "requests storage 200Gi but Supervisor supervisor-vc1 has 100Gi available"},
		{name: "each fits, together too much", requests: []*precheckv1.ResourceQuota{q(3000, 1<<30, 1<<30), q(3000, 1<<30, 1<<30)},
			status: []string{StatusFailed, StatusFailed}, msg: "the service's SupervisorServices on supervisor-vc1 together request cpu 6 but 4 is available"},
		{name: "nothing requested", requests: []*precheckv1.ResourceQuota{nil},
			status: []string{StatusPassed}, msg: "requests cpu 0, memory 0, storage 0"},
		{name: "Supervisor reports no quota", requests: []*precheckv1.ResourceQuota{q(1, 1, 1)},
			platform: func(p *precheckv1.PlatformFacts) { p.Supervisors[0].Available = nil },
			status:   []string{StatusFailed}, msg: "Supervisor supervisor-vc1 reported no available quota"},
		{name: "Supervisor not in the inventory", requests: []*precheckv1.ResourceQuota{q(1, 1, 1)},
			platform: func(p *precheckv1.PlatformFacts) { p.Supervisors = nil },
			status:   []string{StatusFailed}, msg: "Supervisor supervisor-vc1 is not in the platform inventory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var docs []doc
			for _, r := range tc.requests {
				docs = append(docs, doc{yaml: fixture(t, "SupervisorService"), staged: staged(r)})
			}
			req := request(t, docs...)
			if tc.platform != nil {
				tc.platform(req.Platform)
			}
			report := runChecks(t, req)
			for i, want := range tc.status {
				c := check(report, i, CheckResourceQuota)
				require.Equal(t, want, c.GetStatus(), c.GetMessage())
			}
			require.Contains(t, check(report, len(tc.status)-1, CheckResourceQuota).GetMessage(), tc.msg)
		})
	}
}

// registryFixture is go-containerregistry's in-process registry on
// 127.0.0.1 with the bundle's repository, holding some images.
type registryFixture struct {
	host string // 127.0.0.1:port
	repo string // host/arcturus/bundle
}

func startRegistry(t *testing.T) *registryFixture {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	return &registryFixture{host: host, repo: host + "/arcturus/bundle"}
}

// push stores a random image in the bundle repository (as imgpkg copy
// relocates it) and returns its digest.
func (r *registryFixture) push(t *testing.T) string {
	t.Helper()
	img, err := random.Image(256, 1)
	require.NoError(t, err)
	d, err := img.Digest()
	require.NoError(t, err)
	ref, err := name.NewDigest(r.repo + "@" + d.String())
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img))
	return d.String()
}

func digestOf(t *testing.T) string {
	t.Helper()
	img, err := random.Image(64, 1)
	require.NoError(t, err)
	d, err := img.Digest()
	require.NoError(t, err)
	return d.String()
}

func imagesLock(images ...string) []byte {
	var b strings.Builder
	b.WriteString("---\napiVersion: imgpkg.carvel.dev/v1alpha1\nkind: ImagesLock\nimages:\n")
	for _, i := range images {
		fmt.Fprintf(&b, "- image: %s\n  annotations:\n    kbld.carvel.dev/id: %s\n", i, i)
	}
	if len(images) == 0 {
		b.WriteString("  []\n")
	}
	return []byte(b.String())
}

func TestImageAvailability(t *testing.T) {
	reg := startRegistry(t)
	inRegistry := reg.push(t)
	inRegistry2 := reg.push(t)
	bundled := digestOf(t)
	absent := digestOf(t)
	const origin = "registry.example.com/arcturus/app@"

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedRepo := closed.Addr().String() + "/arcturus/bundle"
	require.NoError(t, closed.Close())

	tests := []struct {
		name    string
		lock    []byte
		bundled []string
		repo    string
		status  string
		msg     string
	}{
		{name: "carried in the tarball", lock: imagesLock(origin + bundled), bundled: []string{bundled},
			status: StatusPassed, msg: "all 1 images of .imgpkg/images.yml are available: 1 in the bundle tarball"},
		{name: "bundled digests may be full references", lock: imagesLock(origin + bundled), bundled: []string{"index.docker.io/x/y@" + bundled},
			status: StatusPassed, msg: "all 1 images of .imgpkg/images.yml are available: 1 in the bundle tarball"},
		{name: "relocated to the bundle's registry", lock: imagesLock(origin+inRegistry, origin+inRegistry2, origin+bundled), bundled: []string{bundled}, repo: "oci://" + reg.repo + ":2.11.1",
			status: StatusPassed, msg: "all 3 images of .imgpkg/images.yml are available: 1 in the bundle tarball, 2 in " + reg.repo},
		{name: "in neither", lock: imagesLock(origin+inRegistry, origin+absent), repo: reg.repo,
			status: StatusFailed, msg: "1 of 2 images of .imgpkg/images.yml are unavailable: " + origin + absent + " (not in the bundle tarball, and " + reg.repo + " has no manifest " + absent + ")"},
		{name: "not bundled and no registry to look in", lock: imagesLock(origin + inRegistry),
			status: StatusFailed, msg: "1 of 1 images of .imgpkg/images.yml are unavailable: " + origin + inRegistry + " (not carried in the bundle tarball, and the bundle has no registry to look in)"},
		{name: "registry unreachable", lock: imagesLock(origin + inRegistry), repo: closedRepo,
			status: StatusFailed, msg: "(looking it up in " + closedRepo + " failed:"},
		{name: "registry repository unparsable", lock: imagesLock(origin + inRegistry), repo: "UPPER CASE/repo",
			status: StatusFailed, msg: `registry repository "UPPER CASE/repo" is not a repository reference`},
		{name: "no images", lock: imagesLock(), status: StatusPassed, msg: ".imgpkg/images.yml references no images"},
		{name: "no images.yml", lock: nil, status: StatusFailed, msg: "the bundle has no .imgpkg/images.yml, so the images it needs cannot be verified"},
		{name: "an image by tag", lock: imagesLock("registry.example.com/arcturus/app:latest"),
			status: StatusFailed, msg: ".imgpkg/images.yml is not a valid imgpkg ImagesLock: Validating images lock: Expected ref to be in digest form, got 'registry.example.com/arcturus/app:latest'"},
		{name: "not an ImagesLock", lock: []byte("apiVersion: imgpkg.carvel.dev/v1alpha1\nkind: BundleLock\n"),
			status: StatusFailed, msg: ".imgpkg/images.yml is not a valid imgpkg ImagesLock:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, doc{yaml: fixture(t, "SupervisorService")}, doc{yaml: fixture(t, "SupervisorService")})
			req.Bundle.ImagesLockYaml = tc.lock
			req.Bundle.BundledImageDigests = tc.bundled
			req.Bundle.RegistryRepository = tc.repo
			checker := NewChecker(Options{RegistryTimeout: 20 * time.Second, RegistryOptions: []remote.Option{}})
			report, err := checker.Run(context.Background(), req)
			require.NoError(t, err)
			for i := range 2 { // every SupervisorService reports it
				c := check(report, i, CheckImageAvailability)
				require.Equal(t, tc.status, c.GetStatus(), c.GetMessage())
				if tc.status == StatusPassed {
					require.Equal(t, tc.msg, c.GetMessage())
				} else {
					require.Contains(t, c.GetMessage(), tc.msg)
				}
			}
		})
	}
}

func TestFormatting(t *testing.T) {
	require.Equal(t, "250m", formatCPU(250))
	require.Equal(t, "2", formatCPU(2000))
	require.Equal(t, "1500m", formatCPU(1500))
	require.Equal(t, "0", formatBytes(0))
	require.Equal(t, "1000", formatBytes(1000))
	require.Equal(t, "1Ki", formatBytes(1024))
	require.Equal(t, "1536Ki", formatBytes(1536<<10))
	require.Equal(t, "3Gi", formatBytes(3<<30))
}
