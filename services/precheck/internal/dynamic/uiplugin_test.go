package dynamic

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/stretchr/testify/require"
)

func TestPluginManifest(t *testing.T) {
	tests := []struct {
		name     string
		manifest func(t testing.TB) []byte // nil: none in the bundle
		image    string
		status   string
		msg      string
	}{
		{name: "valid", manifest: pluginManifestJSON, status: StatusPassed,
			msg: "manifest.json of " + pluginImage + ": Arcturus 2.11.1 by Example, built for UI container 9.1.0"},
		{name: "not in the bundle", status: StatusFailed, msg: "the bundle carries no manifest.json for plugin image " + pluginImage},
		{name: "under another image", manifest: pluginManifestJSON, image: pluginImage + "-other", status: StatusFailed,
			msg: "the bundle carries no manifest.json for plugin image " + pluginImage + "-other"},
		{name: "not JSON", manifest: func(testing.TB) []byte { return []byte("PK\x03\x04 zip bytes") }, status: StatusFailed,
			msg: "manifest.json of " + pluginImage + " is not a JSON object: invalid character 'P' looking for beginning of value"},
		{name: "missing and empty fields", manifest: func(t testing.TB) []byte {
			return editJSON(t, pluginManifestJSON(t), func(m map[string]any) {
				delete(m, "urn")
				delete(m, "module")
				m["route"] = ""
				m["vendor"] = 7
			})
		}, status: StatusFailed, msg: "manifest.json of " + pluginImage + ": urn is required; vendor must be a string; module is required; route must not be empty"},
		{name: "version not a version", manifest: func(t testing.TB) []byte {
			return editJSON(t, pluginManifestJSON(t), func(m map[string]any) { m["version"] = "latest" })
		}, status: StatusFailed, msg: `manifest.json of ` + pluginImage + `: version "latest" is not a version: malformed version: latest`},
		{name: "vcfaVersion not a constraint", manifest: func(t testing.TB) []byte {
			return editJSON(t, pluginManifestJSON(t), func(m map[string]any) { m["vcfaVersion"] = "nine point two" })
		}, status: StatusFailed, msg: `manifest.json of ` + pluginImage + `: vcfaVersion "nine point two" is not a version constraint: malformed constraint: nine point two`},
		{name: "unknown scope", manifest: func(t testing.TB) []byte {
			return editJSON(t, pluginManifestJSON(t), func(m map[string]any) { m["scope"] = []any{"tenant", "everyone"} })
		}, status: StatusFailed, msg: "manifest.json of " + pluginImage + ": scope entry everyone is not one of service-provider, tenant"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			y := fixture(t, "UserInterfacePlugin")
			if tc.image != "" {
				y = edit(t, y, func(m map[string]any) { spec(m)["image"] = tc.image })
			}
			req := request(t, doc{yaml: y})
			delete(req.Bundle.PluginManifests, pluginImage)
			if tc.manifest != nil {
				req.Bundle.PluginManifests[pluginImage] = tc.manifest(t)
			}
			c := check(runChecks(t, req), 0, CheckPluginManifest)
			require.Equal(t, tc.status, c.GetStatus(), c.GetMessage())
			require.Equal(t, tc.msg, c.GetMessage())
		})
	}
}

// TestPluginManifestLookup: the bundle keys manifests by ImagesLock
// reference; spec.image may name the plugin by that key, by digest in
// another repository, or by the tag kbld recorded.
func TestPluginManifestLookup(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	const lockRef = "registry.example.com/vcf-plugins/arcturus-ui-plugin.zip@" + digest
	lock := []byte("apiVersion: imgpkg.carvel.dev/v1alpha1\nkind: ImagesLock\nimages:\n- image: " + lockRef +
		"\n  annotations:\n    kbld.carvel.dev/id: " + pluginImage + "\n")
	tests := []struct {
		name  string
		image string
		found bool
	}{
		{"the lock reference itself", lockRef, true},
		{"the same digest, relocated", "depot.provider.example/mirror/arcturus-ui@" + digest, true},
		{"the tag kbld pinned", pluginImage, true},
		{"another tag", "arcturus.example.com/vcf-plugins/arcturus-ui-plugin.zip:2.12.0", false},
		{"another digest", "registry.example.com/vcf-plugins/arcturus-ui-plugin.zip@sha256:" + strings.Repeat("f", 64), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, doc{yaml: edit(t, fixture(t, "UserInterfacePlugin"), func(m map[string]any) { spec(m)["image"] = tc.image })})
			req.Bundle.ImagesLockYaml = lock
			req.Bundle.PluginManifests = map[string][]byte{lockRef: pluginManifestJSON(t)}
			c := check(runChecks(t, req), 0, CheckPluginManifest)
			if tc.found {
				require.Equal(t, StatusPassed, c.GetStatus(), c.GetMessage())
			} else {
				require.Equal(t, "the bundle carries no manifest.json for plugin image "+tc.image, c.GetMessage())
			}
		})
	}
}

// TestBinaryCompatibility: one row per cell of the support table that
// matters, and the rules around it.
func TestBinaryCompatibility(t *testing.T) {
	tests := []struct {
		vcfa      string
		container string
		status    string
		msg       string
	}{
		{"9.0", "9.0.0", StatusPassed, "VCF Automation 9.0 loads plugins built for UI container 9.0.0 (accepts >= 9.0, < 9.1)"},
		{"9.0.1.0", "9.0.3", StatusPassed, "VCF Automation 9.0.1.0 loads plugins built for UI container 9.0.3 (accepts >= 9.0, < 9.1)"},
		{"9.0", "9.1.0", StatusFailed, "plugin built for UI container 9.1.0 cannot run on VCF Automation 9.0, which loads UI container versions >= 9.0, < 9.1"},
		{"9.1", "9.0.0", StatusPassed, "VCF Automation 9.1 loads plugins built for UI container 9.0.0 (accepts >= 9.0, < 9.2)"},
		{"9.1", "9.1.0-beta.1", StatusPassed, "VCF Automation 9.1 loads plugins built for UI container 9.1.0-beta.1 (accepts >= 9.0, < 9.2)"},
		{"9.1", "9.2.0", StatusFailed, "plugin built for UI container 9.2.0 cannot run on VCF Automation 9.1, which loads UI container versions >= 9.0, < 9.2"},
		{"9.2.0.0", "9.2.0", StatusPassed, "VCF Automation 9.2.0.0 loads plugins built for UI container 9.2.0 (accepts >= 9.0, < 9.3)"},
		{"9.2", "10.5.0", StatusFailed, "plugin built for UI container 10.5.0 cannot run on VCF Automation 9.2, which loads UI container versions >= 9.0, < 9.3"},
		{"9.3", "9.3.0", StatusWarning, "VCF Automation 9.3 is newer than the compatibility table (last 9.2.0); UI container 9.3.0 assumed compatible"},
		{"9.3", "9.4.0", StatusFailed, "plugin built for UI container 9.4.0 cannot run on VCF Automation 9.3"},
		{"10.0", "9.2.0", StatusFailed, "plugin built for UI container 9.2.0 cannot run on VCF Automation 10.0"},
		{"8.5", "9.0.0", StatusFailed, "VCF Automation 8.5 predates UI plugins of VCF Services (from 9.0.0)"},
		{"", "9.0.0", StatusFailed, "cannot check: the platform's VCF Automation version is not known"},
		{"latest", "9.0.0", StatusFailed, `cannot check: VCF Automation version "latest" is not a version`},
		{"9.1", "", StatusFailed, "cannot check: the plugin manifest declares no containerVersion"},
		{"9.1", "x", StatusFailed, `cannot check: containerVersion "x" is not a version`},
	}
	for _, tc := range tests {
		t.Run(tc.vcfa+" loads "+tc.container, func(t *testing.T) {
			req := request(t, doc{yaml: fixture(t, "UserInterfacePlugin")})
			req.Platform.VcfaVersion = tc.vcfa
			req.Bundle.PluginManifests[pluginImage] = editJSON(t, pluginManifestJSON(t), func(m map[string]any) {
				if tc.container == "" {
					delete(m, "containerVersion")
				} else {
					m["containerVersion"] = tc.container
				}
			})
			c := check(runChecks(t, req), 0, CheckBinaryCompatibility)
			require.Equal(t, tc.status, c.GetStatus(), c.GetMessage())
			require.Equal(t, tc.msg, c.GetMessage())
		})
	}
}

func TestSupportTableParses(t *testing.T) {
	for _, row := range uiContainerSupport {
		_, err := version.NewVersion(row.release)
		require.NoError(t, err, row.release)
		_, err = version.NewConstraint(row.accepts)
		require.NoError(t, err, row.accepts)
	}
}

// TestVCFAutomationVersion is the PluginCompatibility check, with seed
// 002's message.
func TestVCFAutomationVersion(t *testing.T) {
	tests := []struct {
		name       string
		constraint any // nil: absent
		vcfa       string
		status     string
		msg        string
	}{
		{"seed 002's example", ">=9.2", "9.1", StatusFailed, "Plugin requires VCF Automation 9.2+, current version: 9.1"},
		{"spaces and a v", ">= v9.2.1", "9.2.0", StatusFailed, "Plugin requires VCF Automation 9.2.1+, current version: 9.2.0"},
		{"met", ">=9.2", "9.2", StatusPassed, "VCF Automation 9.2 satisfies the plugin's vcfaVersion >=9.2"},
		{"met by four segments", ">=9.2", "9.2.0.1", StatusPassed, "VCF Automation 9.2.0.1 satisfies the plugin's vcfaVersion >=9.2"},
		{"a range", ">= 9.1, < 9.3", "9.3.0", StatusFailed, "Plugin requires VCF Automation >= 9.1, < 9.3, current version: 9.3.0"},
		{"pessimistic", "~> 9.1", "10.0", StatusFailed, "Plugin requires VCF Automation ~> 9.1, current version: 10.0"},
		{"no requirement", nil, "9.0", StatusPassed, "the plugin manifest sets no minimum VCF Automation version (vcfaVersion)"},
		{"platform version unknown", ">=9.2", "", StatusFailed, "cannot check vcfaVersion >=9.2: the platform's VCF Automation version is not known"},
		{"platform version garbage", ">=9.2", "nine", StatusFailed, `cannot check: VCF Automation version "nine" is not a version`},
		{"constraint garbage", "newest", "9.2", StatusFailed, `cannot check: vcfaVersion "newest" is not a version constraint`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, doc{yaml: fixture(t, "UserInterfacePlugin")})
			req.Platform.VcfaVersion = tc.vcfa
			req.Bundle.PluginManifests[pluginImage] = editJSON(t, pluginManifestJSON(t), func(m map[string]any) {
				if tc.constraint == nil {
					delete(m, "vcfaVersion")
				} else {
					m["vcfaVersion"] = tc.constraint
				}
			})
			c := check(runChecks(t, req), 0, CheckPluginCompatibility)
			require.Equal(t, tc.status, c.GetStatus(), c.GetMessage())
			require.Equal(t, tc.msg, c.GetMessage())
		})
	}
}
