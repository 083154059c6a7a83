package dynamic

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"carvel.dev/imgpkg/pkg/imgpkg/lockconfig"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/hashicorp/go-version"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
)

// pluginManifest is the part of a VCF Automation UI plugin's manifest.json
// the checks read.
type pluginManifest struct {
	image            string
	containerVersion string
	vcfaVersion      string // a constraint such as ">=9.2"; empty: none
}

// manifestFields are the manifest.json fields a UI plugin must carry:
// the plugin's identity, the UI container version it was built for, and
// the Angular module and route it plugs into.
var manifestFields = []string{"urn", "name", "version", "vendor", "containerVersion", "module", "route"}

// manifestScopes are the portals a plugin may declare in "scope".
var manifestScopes = []string{"service-provider", "tenant"}

// pluginManifestCheck is PluginManifest: the bundle carries a manifest.json
// for spec.image with every required field, and the optional fields it has
// are well formed. It also returns what the other plugin checks read, as
// far as it could be read.
func (r *run) pluginManifestCheck(res *resource) (pluginManifest, *commonv1.Check) {
	image, _ := str(res.doc, "spec", "image")
	m := pluginManifest{image: image}
	if image == "" {
		return m, failed(CheckPluginManifest, "spec.image is not set, so there is no plugin manifest to check")
	}
	raw, ok := findManifest(r.req.GetBundle(), image)
	if !ok {
		return m, failed(CheckPluginManifest, fmt.Sprintf("the bundle carries no manifest.json for plugin image %s", image))
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		return m, failed(CheckPluginManifest, fmt.Sprintf("manifest.json of %s is not a JSON object: %v", image, err))
	}
	m.containerVersion, _ = doc["containerVersion"].(string)
	m.vcfaVersion, _ = doc["vcfaVersion"].(string)

	var problems []string
	for _, f := range manifestFields {
		v, present := doc[f]
		s, isStr := v.(string)
		switch {
		case !present:
			problems = append(problems, f+" is required")
		case !isStr:
			problems = append(problems, f+" must be a string")
		case strings.TrimSpace(s) == "":
			problems = append(problems, f+" must not be empty")
		}
	}
	for _, f := range []string{"version", "containerVersion"} {
		if s, _ := doc[f].(string); s != "" {
			if _, err := version.NewVersion(s); err != nil {
				problems = append(problems, fmt.Sprintf("%s %q is not a version: %v", f, s, err))
			}
		}
	}
	if v, present := doc["vcfaVersion"]; present {
		s, isStr := v.(string)
		if !isStr {
			problems = append(problems, "vcfaVersion must be a string constraint such as \">=9.2\"")
		} else if _, err := version.NewConstraint(s); err != nil {
			problems = append(problems, fmt.Sprintf("vcfaVersion %q is not a version constraint: %v", s, err))
		}
	}
	if v, present := doc["scope"]; present {
		list, isList := v.([]any)
		if !isList {
			problems = append(problems, "scope must be a list")
		}
		for _, e := range list {
			if s, _ := e.(string); !slices.Contains(manifestScopes, s) {
				problems = append(problems, fmt.Sprintf("scope entry %v is not one of %s", e, strings.Join(manifestScopes, ", ")))
			}
		}
	}
	for _, f := range []string{"description", "license", "link"} {
		if v, present := doc[f]; present {
			if _, isStr := v.(string); !isStr {
				problems = append(problems, f+" must be a string")
			}
		}
	}
	if len(problems) > 0 {
		return m, failed(CheckPluginManifest, fmt.Sprintf("manifest.json of %s: %s", image, strings.Join(problems, "; ")))
	}
	return m, passed(CheckPluginManifest, fmt.Sprintf("manifest.json of %s: %s %s by %s, built for UI container %s", image, doc["name"], doc["version"], doc["vendor"], m.containerVersion))
}

// kbldID is the ImagesLock annotation kbld writes with the reference an
// image had in the templates before it was pinned to a digest.
const kbldID = "kbld.carvel.dev/id"

// findManifest finds the plugin manifest of spec.image. The bundle keys
// manifests by ImagesLock image reference (digest form), while templates
// may name the image by tag, so it matches, in order: the key itself; the
// same digest in any repository (relocation changes the repository); the
// ImagesLock entry whose kbld.carvel.dev/id is spec.image.
func findManifest(b *precheckv1.BundleFacts, image string) ([]byte, bool) {
	manifests := b.GetPluginManifests()
	if raw, ok := manifests[image]; ok {
		return raw, true
	}
	if d, err := name.NewDigest(image); err == nil {
		for key, raw := range manifests {
			if _, digest, ok := strings.Cut(key, "@"); ok && digest == d.DigestStr() {
				return raw, true
			}
		}
	}
	lock, err := lockconfig.NewImagesLockFromBytes(b.GetImagesLockYaml())
	if err != nil {
		return nil, false
	}
	for _, img := range lock.Images {
		if img.Annotations[kbldID] != image {
			continue
		}
		_, digest, _ := strings.Cut(img.Image, "@")
		for key, raw := range manifests {
			if _, d, ok := strings.Cut(key, "@"); ok && d == digest {
				return raw, true
			}
		}
	}
	return nil, false
}

// uiContainerSupport is the binary compatibility table: for each VCF
// Automation release line, the UI container versions whose plugins it
// loads. A release newer than the last row loads plugins built for its own
// major version up to its own minor, with a warning until it gets a row.
var uiContainerSupport = []struct {
	release string // major.minor of VCF Automation
	accepts string // constraint on the plugin's containerVersion
}{
	{"9.0", ">= 9.0, < 9.1"},
	{"9.1", ">= 9.0, < 9.2"},
	{"9.2", ">= 9.0, < 9.3"},
}

// binaryCompatibilityCheck is BinaryCompatibility: the plugin's
// containerVersion is one the platform's VCF Automation loads.
func binaryCompatibilityCheck(m pluginManifest, vcfa string) *commonv1.Check {
	if m.containerVersion == "" {
		return failed(CheckBinaryCompatibility, "cannot check: the plugin manifest declares no containerVersion")
	}
	cv, err := version.NewVersion(m.containerVersion)
	if err != nil {
		return failed(CheckBinaryCompatibility, fmt.Sprintf("cannot check: containerVersion %q is not a version", m.containerVersion))
	}
	cv = cv.Core()
	if vcfa == "" {
		return failed(CheckBinaryCompatibility, "cannot check: the platform's VCF Automation version is not known")
	}
	pv, err := version.NewVersion(vcfa)
	if err != nil {
		return failed(CheckBinaryCompatibility, fmt.Sprintf("cannot check: VCF Automation version %q is not a version", vcfa))
	}
	seg := pv.Segments64()
	release := fmt.Sprintf("%d.%d", seg[0], seg[1])
	for _, row := range uiContainerSupport {
		if row.release != release {
			continue
		}
		c := version.MustConstraints(version.NewConstraint(row.accepts))
		if c.Check(cv) {
			return passed(CheckBinaryCompatibility, fmt.Sprintf("VCF Automation %s loads plugins built for UI container %s (accepts %s)", vcfa, m.containerVersion, row.accepts))
		}
		return failed(CheckBinaryCompatibility, fmt.Sprintf("plugin built for UI container %s cannot run on VCF Automation %s, which loads UI container versions %s", m.containerVersion, vcfa, row.accepts))
	}
	last := version.Must(version.NewVersion(uiContainerSupport[len(uiContainerSupport)-1].release))
	first := version.Must(version.NewVersion(uiContainerSupport[0].release))
	cseg := cv.Segments64()
	switch {
	case pv.LessThan(first):
		return failed(CheckBinaryCompatibility, fmt.Sprintf("VCF Automation %s predates UI plugins of VCF Services (from %s)", vcfa, first))
	case pv.GreaterThan(last) && cseg[0] == seg[0] && cseg[1] <= seg[1]:
		return warning(CheckBinaryCompatibility, fmt.Sprintf("VCF Automation %s is newer than the compatibility table (last %s); UI container %s assumed compatible", vcfa, last, m.containerVersion))
	default:
		return failed(CheckBinaryCompatibility, fmt.Sprintf("plugin built for UI container %s cannot run on VCF Automation %s", m.containerVersion, vcfa))
	}
}

// atLeast matches a constraint that is a single lower bound, ">=9.2".
var atLeast = regexp.MustCompile(`^>=\s*v?([0-9][0-9A-Za-z.\-+]*)$`)

// vcfaVersionCheck is the VCF Automation version check (named
// PluginCompatibility, as in seed 002's example): the manifest's
// vcfaVersion constraint holds for the platform's VCF Automation.
func vcfaVersionCheck(m pluginManifest, vcfa string) *commonv1.Check {
	constraint := strings.TrimSpace(m.vcfaVersion)
	if constraint == "" {
		return passed(CheckPluginCompatibility, "the plugin manifest sets no minimum VCF Automation version (vcfaVersion)")
	}
	c, err := version.NewConstraint(constraint)
	if err != nil {
		return failed(CheckPluginCompatibility, fmt.Sprintf("cannot check: vcfaVersion %q is not a version constraint", constraint))
	}
	if vcfa == "" {
		return failed(CheckPluginCompatibility, fmt.Sprintf("cannot check vcfaVersion %s: the platform's VCF Automation version is not known", constraint))
	}
	pv, err := version.NewVersion(vcfa)
	if err != nil {
		return failed(CheckPluginCompatibility, fmt.Sprintf("cannot check: VCF Automation version %q is not a version", vcfa))
	}
	if c.Check(pv) {
		return passed(CheckPluginCompatibility, fmt.Sprintf("VCF Automation %s satisfies the plugin's vcfaVersion %s", vcfa, constraint))
	}
	need := constraint
	if sm := atLeast.FindStringSubmatch(constraint); sm != nil {
		need = sm[1] + "+"
	}
	return failed(CheckPluginCompatibility, fmt.Sprintf("Plugin requires VCF Automation %s, current version: %s", need, vcfa))
}
