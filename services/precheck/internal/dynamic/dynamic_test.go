package dynamic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
)

const (
	testSupervisor = "supervisor-vc1"
	testVCFA       = "vcfa"
	testVCenter    = "vcenter-1"
	pluginImage    = "arcturus.example.com/vcf-plugins/arcturus-ui-plugin.zip:2.11.1"
)

// fixture is a valid document of kind, as the element-types docs show it.
func fixture(t testing.TB, kind string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "resources", kind+".yaml"))
	require.NoError(t, err)
	return b
}

// edit changes a document.
func edit(t testing.TB, doc []byte, change func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, yaml.Unmarshal(doc, &m))
	change(m)
	out, err := yaml.Marshal(m)
	require.NoError(t, err)
	return out
}

// spec is the spec mapping of a parsed document.
func spec(m map[string]any) map[string]any { return m["spec"].(map[string]any) }

func pluginManifestJSON(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "plugins", "arcturus-ui-manifest.json"))
	require.NoError(t, err)
	return b
}

// editJSON changes a JSON object.
func editJSON(t testing.TB, doc []byte, change func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(doc, &m))
	change(m)
	out, err := json.Marshal(m)
	require.NoError(t, err)
	return out
}

// targetOf is where the lifecycle service stages each kind.
func targetOf(kind string) string {
	switch kind {
	case "SupervisorService", "SupervisorRegistry":
		return testSupervisor
	case "VcServiceAccount":
		return testVCenter
	case "Secret", "Overlay":
		return ""
	default:
		return testVCFA
	}
}

// facts is a platform where every target serves every element type and
// the Supervisor has room.
func facts() *precheckv1.PlatformFacts {
	return &precheckv1.PlatformFacts{
		VcfaVersion: "9.2",
		Supervisors: []*precheckv1.SupervisorFacts{{
			Name: testSupervisor, Version: "9.0.0.0", KubernetesVersion: "v1.30.2+vmware.1",
			Available:            &precheckv1.ResourceQuota{CpuMillicores: 4000, MemoryBytes: 8 << 30, StorageBytes: 100 << 30},
			SupportedApiVersions: []string{"services.vcfa.broadcom.com/v2/SupervisorService", "services.vcfa.broadcom.com/v2/SupervisorRegistry"},
		}},
		Targets: []*precheckv1.TargetFacts{
			{Name: testVCFA, SupportedApiVersions: []string{"services.vcfa.broadcom.com/v2"}},
			{Name: testVCenter, SupportedApiVersions: []string{"services.vcfa.broadcom.com/v2/VcServiceAccount"}},
		},
	}
}

// bundle carries the plugin manifest and an empty image lock.
func bundle(t testing.TB) *precheckv1.BundleFacts {
	return &precheckv1.BundleFacts{
		ImagesLockYaml:  []byte("apiVersion: imgpkg.carvel.dev/v1alpha1\nkind: ImagesLock\nimages: []\n"),
		PluginManifests: map[string][]byte{pluginImage: pluginManifestJSON(t)},
	}
}

// doc is one resource for a request.
type doc struct {
	yaml   []byte
	staged *precheckv1.StagedResource // nil: stage reachable on its target
	skip   bool                       // send no staged entry
}

// request builds a request with the resources at indexes 0..n-1, each
// staged (reachable, 500m/512Mi/1Gi) on its target unless told otherwise.
func request(t testing.TB, docs ...doc) *precheckv1.RunDynamicPrechecksRequest {
	t.Helper()
	req := &precheckv1.RunDynamicPrechecksRequest{Bundle: bundle(t), Platform: facts()}
	for i, d := range docs {
		var m map[string]any
		require.NoError(t, yaml.Unmarshal(d.yaml, &m))
		kind, _ := m["kind"].(string)
		apiVersion, _ := m["apiVersion"].(string)
		req.Resources = append(req.Resources, &commonv1.Resource{ApiVersion: apiVersion, Kind: kind, Yaml: d.yaml, Index: int32(i)})
		if d.skip {
			continue
		}
		s := d.staged
		if s == nil {
			target := targetOf(kind)
			if target == "" {
				continue
			}
			s = &precheckv1.StagedResource{Target: target, Reachable: true,
				Requested: &precheckv1.ResourceQuota{CpuMillicores: 500, MemoryBytes: 512 << 20, StorageBytes: 1 << 30}}
		}
		s.Index = int32(i)
		req.Staged = append(req.Staged, s)
	}
	return req
}

func runChecks(t testing.TB, req *precheckv1.RunDynamicPrechecksRequest) *commonv1.PreCheckReport {
	t.Helper()
	report, err := NewChecker(Options{}).Run(context.Background(), req)
	require.NoError(t, err)
	return report
}

// check finds a named check of resource i; nil when it did not run.
func check(report *commonv1.PreCheckReport, i int, name string) *commonv1.Check {
	for _, c := range report.GetResourceChecks()[i].GetChecks() {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

func checkNames(rc *commonv1.ResourceCheck) []string {
	var out []string
	for _, c := range rc.GetChecks() {
		out = append(out, c.GetName())
	}
	return out
}

// TestSeedExampleReport reproduces seed 002's example: a UI plugin that
// needs VCF Automation 9.2 on 9.1, with the JSON field names exactly as the
// seed shows them.
func TestSeedExampleReport(t *testing.T) {
	req := request(t, doc{yaml: fixture(t, "UserInterfacePlugin")})
	req.Platform.VcfaVersion = "9.1"
	report := runChecks(t, req)

	js, err := protojson.Marshal(report)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(js, &got))

	require.Equal(t, []string{"preCheckStatus", "resourceChecks"}, keys(got))
	require.Equal(t, "Failed", got["preCheckStatus"])
	rcs := got["resourceChecks"].([]any)
	require.Len(t, rcs, 1)
	rc := rcs[0].(map[string]any)
	require.Equal(t, []string{"checks", "name", "status", "type"}, keys(rc))
	require.Equal(t, "UserInterfacePlugin", rc["type"])
	require.Equal(t, "arcturus-ui", rc["name"])
	require.Equal(t, "Failed", rc["status"])
	var compat map[string]any
	for _, c := range rc["checks"].([]any) {
		cm := c.(map[string]any)
		require.Equal(t, []string{"message", "name", "status"}, keys(cm))
		if cm["name"] == "PluginCompatibility" {
			compat = cm
		}
	}
	require.Equal(t, map[string]any{
		"name":    "PluginCompatibility",
		"status":  "Failed",
		"message": "Plugin requires VCF Automation 9.2+, current version: 9.1",
	}, compat)
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestChecksPerKind is seed 002's table: which checks each resource type
// gets, every fixture passing all of them.
func TestChecksPerKind(t *testing.T) {
	tests := []struct {
		kind   string
		checks []string
	}{
		{"SupervisorService", []string{"Staging", "SchemaValidation", "ApiCompatibility", "PackageManifest", "ImageAvailability", "ResourceQuota"}},
		{"UserInterfacePlugin", []string{"Staging", "SchemaValidation", "ApiCompatibility", "PluginManifest", "BinaryCompatibility", "PluginCompatibility"}},
		{"SupervisorRegistry", []string{"Staging", "SchemaValidation", "ApiCompatibility"}},
		{"Overlay", []string{"SchemaValidation", "ApiCompatibility"}},
		{"GlobalRole", []string{"Staging", "SchemaValidation", "ApiCompatibility"}},
		{"Role", []string{"Staging", "SchemaValidation", "ApiCompatibility"}},
		{"RightBundle", []string{"Staging", "SchemaValidation", "ApiCompatibility"}},
		{"VcfaServiceAccount", []string{"Staging", "SchemaValidation", "ApiCompatibility"}},
		{"VcServiceAccount", []string{"Staging", "SchemaValidation", "ApiCompatibility"}},
		{"ApiExtension", []string{"Staging", "SchemaValidation", "ApiCompatibility"}},
		{"ApiExtensionProxy", []string{"Staging", "SchemaValidation", "ApiCompatibility"}},
		{"RelyingParty", []string{"Staging", "SchemaValidation", "ApiCompatibility"}},
		{"RdeBundle", []string{"Staging", "SchemaValidation", "ApiCompatibility"}},
		{"Secret", []string{"SchemaValidation"}},
	}
	require.Len(t, tests, len(elementSpecs)+1, "one row per element type, plus Secret")
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			report := runChecks(t, request(t, doc{yaml: fixture(t, tc.kind)}))
			rc := report.GetResourceChecks()[0]
			require.Equal(t, tc.checks, checkNames(rc))
			for _, c := range rc.GetChecks() {
				require.Equal(t, StatusPassed, c.GetStatus(), "%s: %s", c.GetName(), c.GetMessage())
			}
			require.Equal(t, StatusPassed, rc.GetStatus())
			require.Equal(t, tc.kind, rc.GetType())
			require.Equal(t, StatusPassed, report.GetPreCheckStatus())
		})
	}
}

func TestResourceNameAndSupervisor(t *testing.T) {
	report := runChecks(t, request(t, doc{yaml: fixture(t, "SupervisorService")}, doc{yaml: fixture(t, "Secret")}, doc{yaml: fixture(t, "GlobalRole")}))
	require.Equal(t, "arcturus-install", report.GetResourceChecks()[0].GetName())
	require.Equal(t, testSupervisor, report.GetResourceChecks()[0].GetSupervisor())
	require.Equal(t, "arcturus-install-", report.GetResourceChecks()[1].GetName(), "a Secret without the label is named by generateName")
	require.Empty(t, report.GetResourceChecks()[2].GetSupervisor())

	// The summary's name (the renderer's label) wins over the document's.
	req := request(t, doc{yaml: fixture(t, "GlobalRole")})
	req.Resources[0].Name = "from-summary"
	require.Equal(t, "from-summary", runChecks(t, req).GetResourceChecks()[0].GetName())
}

// TestAggregation: a resource is the worst of its checks; the report
// fails when any resource fails, and warnings do not fail it.
func TestAggregation(t *testing.T) {
	warn := edit(t, fixture(t, "GlobalRole"), func(m map[string]any) { spec(m)["colour"] = "blue" })
	bad := edit(t, fixture(t, "Role"), func(m map[string]any) { delete(spec(m), "name") })

	report := runChecks(t, request(t, doc{yaml: fixture(t, "RdeBundle")}, doc{yaml: warn}))
	require.Equal(t, StatusPassed, report.GetResourceChecks()[0].GetStatus())
	require.Equal(t, StatusWarning, report.GetResourceChecks()[1].GetStatus())
	require.Equal(t, StatusPassed, report.GetPreCheckStatus())

	report = runChecks(t, request(t, doc{yaml: fixture(t, "RdeBundle")}, doc{yaml: warn}, doc{yaml: bad}))
	require.Equal(t, StatusFailed, report.GetResourceChecks()[2].GetStatus())
	require.Equal(t, StatusFailed, report.GetPreCheckStatus())

	report = runChecks(t, &precheckv1.RunDynamicPrechecksRequest{})
	require.Equal(t, StatusPassed, report.GetPreCheckStatus())
	require.Empty(t, report.GetResourceChecks())
}

// TestUnreachableTarget: a resource whose target did not answer fails
// with a Staging check saying so, and the checks that need the target
// are not run.
func TestUnreachableTarget(t *testing.T) {
	tests := []struct {
		kind    string
		message string
		checks  []string
	}{
		{"SupervisorService", "", []string{"Staging", "SchemaValidation", "PackageManifest", "ImageAvailability"}},
		{"UserInterfacePlugin", "connection refused", []string{"Staging", "SchemaValidation", "PluginManifest", "BinaryCompatibility", "PluginCompatibility"}},
		{"GlobalRole", "timeout after 30s", []string{"Staging", "SchemaValidation"}},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			target := targetOf(tc.kind)
			report := runChecks(t, request(t, doc{yaml: fixture(t, tc.kind), staged: &precheckv1.StagedResource{Target: target, Reachable: false, Message: tc.message}}))
			rc := report.GetResourceChecks()[0]
			require.Equal(t, StatusFailed, rc.GetStatus())
			require.Equal(t, StatusFailed, report.GetPreCheckStatus())
			require.Equal(t, tc.checks, checkNames(rc))
			staging := check(report, 0, CheckStaging)
			require.Equal(t, StatusFailed, staging.GetStatus())
			want := "target " + target + " is unreachable; the checks that need it were not run"
			if tc.message != "" {
				want = "target " + target + " is unreachable: " + tc.message + "; the checks that need it were not run"
			}
			require.Equal(t, want, staging.GetMessage())
		})
	}
	report := runChecks(t, request(t, doc{yaml: fixture(t, "GlobalRole"), staged: &precheckv1.StagedResource{Target: testVCFA, Reachable: true, Message: "dry-run accepted"}}))
	require.Equal(t, "staged on vcfa: dry-run accepted", check(report, 0, CheckStaging).GetMessage())
}

// TestRejectedDryRun: a target that refused the dry run (its own
// validation) fails the Staging check with the target's message.
func TestRejectedDryRun(t *testing.T) {
	target := targetOf("SupervisorService")
	report := runChecks(t, request(t, doc{yaml: fixture(t, "SupervisorService"), staged: &precheckv1.StagedResource{Target: target, Reachable: true, Rejected: true,
		Message: "Package.data.packaging.carvel.dev is invalid: metadata.name must be <spec.refName> + '.' + <spec.version>"}}))
	staging := check(report, 0, CheckStaging)
	require.Equal(t, StatusFailed, staging.GetStatus())
	require.Equal(t, StatusFailed, report.GetPreCheckStatus())
	require.Equal(t, target+" refused the dry run: Package.data.packaging.carvel.dev is invalid: metadata.name must be <spec.refName> + '.' + <spec.version>", staging.GetMessage())
}

// TestInvalidRequests: requests that break the RPC contract are refused
// with ErrInvalidInput, naming the resource.
func TestInvalidRequests(t *testing.T) {
	tests := []struct {
		name   string
		change func(req *precheckv1.RunDynamicPrechecksRequest)
		err    string
	}{
		{"empty yaml", func(r *precheckv1.RunDynamicPrechecksRequest) { r.Resources[0].Yaml = nil },
			"resources[0] (GlobalRole ): yaml is empty"},
		{"not YAML", func(r *precheckv1.RunDynamicPrechecksRequest) { r.Resources[0].Yaml = []byte("kind: [") },
			"resources[0] (GlobalRole ): yaml:"},
		{"not a mapping", func(r *precheckv1.RunDynamicPrechecksRequest) { r.Resources[0].Yaml = []byte("- a\n- b\n") },
			"resources[0] (GlobalRole ): yaml:"},
		{"null document", func(r *precheckv1.RunDynamicPrechecksRequest) { r.Resources[0].Yaml = []byte("null\n") },
			"yaml is not a mapping"},
		{"two resources share an index", func(r *precheckv1.RunDynamicPrechecksRequest) { r.Resources[1].Index = 0 },
			"resources[0] (GlobalRole arcturus-admin-role) and resources[1] (Role arcturus-viewer) share index 0"},
		{"staged names no resource", func(r *precheckv1.RunDynamicPrechecksRequest) { r.Staged[1].Index = 7 },
			"staged[1] names resource index 7, which no resource has"},
		{"staged twice", func(r *precheckv1.RunDynamicPrechecksRequest) { r.Staged[1].Index = 0 },
			"staged[1]: resources[0] (GlobalRole arcturus-admin-role) is staged twice"},
		{"not staged", func(r *precheckv1.RunDynamicPrechecksRequest) { r.Staged = r.Staged[:1] },
			"resources[1] (Role arcturus-viewer) was not staged"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, doc{yaml: fixture(t, "GlobalRole")}, doc{yaml: fixture(t, "Role")})
			tc.change(req)
			_, err := NewChecker(Options{}).Run(context.Background(), req)
			require.ErrorIs(t, err, ErrInvalidInput)
			require.ErrorContains(t, err, tc.err)
		})
	}
}

// FuzzRun: no resource document makes the checks panic, and every
// report is well formed.
func FuzzRun(f *testing.F) {
	for _, k := range []string{"SupervisorService", "UserInterfacePlugin", "Secret", "Overlay", "RelyingParty"} {
		f.Add(fixture(f, k))
	}
	f.Add([]byte("kind: SupervisorService\nspec:\n  package: 3\n  packageMetadata: []\n"))
	f.Add([]byte("kind: UserInterfacePlugin\nspec: {image: " + pluginImage + "}\n"))
	f.Add([]byte("kind: Secret\ndata: {a: 1, 'b c': '%%'}\n"))
	c := NewChecker(Options{})
	f.Fuzz(func(t *testing.T, y []byte) {
		req := &precheckv1.RunDynamicPrechecksRequest{
			Resources: []*commonv1.Resource{{Yaml: y}},
			Staged:    []*precheckv1.StagedResource{{Index: 0, Target: testSupervisor, Reachable: true}},
			Bundle:    bundle(t),
			Platform:  facts(),
		}
		report, err := c.Run(context.Background(), req)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidInput)
			return
		}
		require.Contains(t, []string{StatusPassed, StatusFailed}, report.GetPreCheckStatus())
		for _, rc := range report.GetResourceChecks() {
			require.NotEmpty(t, rc.GetChecks())
			for _, ch := range rc.GetChecks() {
				require.Contains(t, []string{StatusPassed, StatusWarning, StatusFailed}, ch.GetStatus())
				require.NotEmpty(t, ch.GetMessage())
			}
		}
	})
}

// Hundreds of documents are parsed on every core: each resource keeps its
// own document, and a bad one is named by its position, the first first.
func TestManyResourcesParsed(t *testing.T) {
	docs := make([]doc, 300)
	for i := range docs {
		docs[i] = doc{yaml: fixture(t, "GlobalRole")}
	}
	req := request(t, docs...)
	for i, r := range req.Resources {
		r.Yaml = bytes.Replace(r.Yaml, []byte("name: arcturus-admin-role"), fmt.Appendf(nil, "name: role-%d", i), 1)
	}
	report, err := NewChecker(Options{}).Run(context.Background(), req)
	require.NoError(t, err)
	require.Len(t, report.GetResourceChecks(), 300)
	for i, rc := range report.GetResourceChecks() {
		require.Equal(t, fmt.Sprintf("role-%d", i), rc.GetName())
	}
	req.Resources[250].Yaml = []byte("kind: [")
	req.Resources[170].Yaml = []byte("kind: [")
	_, err = NewChecker(Options{}).Run(context.Background(), req)
	require.ErrorIs(t, err, ErrInvalidInput)
	require.ErrorContains(t, err, "resources[170]")
}
