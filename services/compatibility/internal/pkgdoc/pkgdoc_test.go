package pkgdoc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/compatibility/internal/compat"
	"github.com/vcfsm/vcfsm/services/compatibility/internal/constraint"
)

func mustNewCache(tb testing.TB) *constraint.Cache {
	tb.Helper()
	c, err := constraint.NewCache(64)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

func newValidator(t testing.TB) *Validator {
	t.Helper()
	return NewValidator(mustNewCache(t))
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

const metadataDoc = `apiVersion: data.packaging.carvel.dev/v1alpha1
kind: PackageMetadata
metadata:
  name: svc.example.com
spec:
  displayName: Svc
`

// packageDoc builds a Package document with the given annotations block
// and spec extras (each already indented for its place).
func packageDoc(annotations, specExtra string) string {
	doc := "apiVersion: packaging.carvel.dev/v1alpha1\nkind: Package\nmetadata:\n  name: svc.example.com.1.0.0\n"
	if annotations != "" {
		doc += "  annotations:\n" + annotations
	}
	return doc + "spec:\n  refName: svc.example.com\n  version: 1.0.0\n" + specExtra
}

func stream(docs ...string) []byte { return []byte("---\n" + strings.Join(docs, "---\n")) }

func TestValidateRealExample(t *testing.T) {
	v := newValidator(t)
	res, err := v.Validate(context.Background(), Request{PackageYAML: fixture(t, "myservice-example-package.yml")})
	require.NoError(t, err)
	require.Empty(t, res.Issues)
	require.True(t, res.Valid)
	require.Equal(t, "myservice.broadcom.com", res.Package.Name)
	require.Empty(t, res.Package.Version, "the source tree leaves spec.version for the build to fill")
	require.Equal(t, compat.Constraints{}, res.Package.Constraints)
}

func TestValidateExtractsConstraints(t *testing.T) {
	v := newValidator(t)
	res, err := v.Validate(context.Background(), Request{
		PackageYAML: fixture(t, "arcturus-constraints.yml"),
		Resources: []Resource{
			{APIVersion: ServicesAPIVersion, Kind: "SupervisorService", Name: "arcturus-install"},
			{APIVersion: "v1", Kind: "Secret", Name: "arcturus-config"},
		},
	})
	require.NoError(t, err)
	require.Empty(t, res.Issues)
	require.True(t, res.Valid)
	require.Equal(t, compat.PackageVersion{
		Name: "arcturus.example.com", Version: "2.0.0",
		Constraints: compat.Constraints{
			SupervisorVersion: ">=9.2.0.0", KubernetesVersion: ">=1.30.0",
			SourceUpgrade: ">1.0.0", DestinationUpgrade: "<3.0.0",
		},
	}, res.Package)
}

func TestValidateReversedDocumentOrder(t *testing.T) {
	v := newValidator(t)
	res, err := v.Validate(context.Background(), Request{PackageYAML: stream(
		packageDoc("    appplatform.vmware.com/supervisor-version-constraints: \">=9.0\"\n", ""), metadataDoc)})
	require.NoError(t, err)
	require.True(t, res.Valid, "%+v", res.Issues)
	require.Equal(t, ">=9.0", res.Package.Constraints.SupervisorVersion)
}

// issue is the expected shape of one issue; says are message fragments.
type issue struct {
	kind, source, expression string
	says                     []string
}

func TestValidateIssues(t *testing.T) {
	v := newValidator(t)
	tests := []struct {
		name      string
		yaml      []byte
		resources []Resource
		builtIn   bool
		want      []issue
	}{
		{
			name: "every invalid constraint is reported at once, each with its expression and source",
			yaml: stream(metadataDoc, packageDoc(
				"    appplatform.vmware.com/supervisor-version-constraints: \"==9.0.0.0\"\n"+
					"    appplatform.vmware.com/source-version-upgrade-constraints: \"~1.2.3\"\n"+
					"    appplatform.vmware.com/destination-version-upgrade-constraints: \"1.0.0 - 2.0.0\"\n",
				"  kubernetesVersionSelection:\n    constraints: \">=1.30\"\n")),
			want: []issue{
				{"SUPERVISOR_VERSION", compat.SourceSupervisorVersion, "==9.0.0.0", []string{`"==9.0.0.0"`, "Syntax B", "does not accept =="}},
				{"KUBERNETES_VERSION", compat.SourceKubernetesVersion, ">=1.30", []string{`">=1.30"`, "Syntax A"}},
				{"SOURCE_UPGRADE", compat.SourceSourceUpgrade, "~1.2.3", []string{`"~1.2.3"`, "tilde and caret"}},
				{"DESTINATION_UPGRADE", compat.SourceDestinationUpgrade, "1.0.0 - 2.0.0", []string{`"1.0.0 - 2.0.0"`, "hyphen ranges"}},
			},
		},
		{
			name: "empty constraints are always compatible",
			yaml: stream(metadataDoc, packageDoc(
				"    appplatform.vmware.com/supervisor-version-constraints: \"\"\n",
				"  kubernetesVersionSelection:\n    constraints: \"\"\n")),
		},
		{
			name: "a constraint that is not a string",
			yaml: stream(metadataDoc, packageDoc("    appplatform.vmware.com/supervisor-version-constraints: 9.2\n", "")),
			want: []issue{{"SUPERVISOR_VERSION", compat.SourceSupervisorVersion, "9.2", []string{"must be a string", "the float 9.2", "quote"}}},
		},
		{
			name: "a Kubernetes constraint that is a list",
			yaml: stream(metadataDoc, packageDoc("", "  kubernetesVersionSelection:\n    constraints: [\">=1.30.0\"]\n")),
			want: []issue{{"KUBERNETES_VERSION", compat.SourceKubernetesVersion, "a list", []string{"must be a string, found a list"}}},
		},
		{
			name: "constraint annotations on the PackageMetadata are ignored by the platform",
			yaml: stream(strings.Replace(metadataDoc, "  name: svc.example.com\n",
				"  name: svc.example.com\n  annotations:\n    appplatform.vmware.com/supervisor-version-constraints: \">=9.0\"\n", 1), packageDoc("", "")),
			want: []issue{{"SUPERVISOR_VERSION", "package.yml document 1 (PackageMetadata) metadata.annotations", ">=9.0",
				[]string{"is on the PackageMetadata document", "move it to the Package document"}}},
		},
		{
			name: "no PackageMetadata",
			yaml: stream(packageDoc("", "")),
			want: []issue{{"PACKAGE", "package.yml", "", []string{"no PackageMetadata document"}}},
		},
		{
			name: "two PackageMetadata documents",
			yaml: stream(metadataDoc, metadataDoc, packageDoc("", "")),
			want: []issue{{"PACKAGE", "package.yml document 2 (PackageMetadata)", "", []string{"second PackageMetadata"}}},
		},
		{
			name: "an unexpected document",
			yaml: stream(metadataDoc, packageDoc("", ""), "apiVersion: v1\nkind: ConfigMap\n"),
			want: []issue{{"PACKAGE", "package.yml document 3 (ConfigMap)", "ConfigMap", []string{"holds only a PackageMetadata and a Package"}}},
		},
		{
			name: "a document without kind",
			yaml: stream(metadataDoc, packageDoc("", ""), "foo: bar\n"),
			want: []issue{{"PACKAGE", "package.yml document 3", "", []string{"has no kind"}}},
		},
		{
			name: "a Package at the wrong apiVersion",
			yaml: stream(metadataDoc, strings.Replace(packageDoc("", ""), "packaging.carvel.dev/v1alpha1", "packaging.carvel.dev/v1", 1)),
			want: []issue{{"PACKAGE", "package.yml document 2 (Package)", "packaging.carvel.dev/v1", []string{"a Carvel Package is packaging.carvel.dev/v1alpha1"}}},
		},
		{
			name: "a version that is not a string",
			yaml: stream(metadataDoc, strings.Replace(packageDoc("", ""), "version: 1.0.0", "version: 1.5", 1)),
			want: []issue{{"PACKAGE", "spec.version", "1.5", []string{"spec.version of the Package document must be a string", "the float 1.5"}}},
		},
		{
			name: "annotations that are not a mapping",
			yaml: stream(metadataDoc, strings.Replace(packageDoc("", ""), "  name: svc.example.com.1.0.0\n", "  name: x\n  annotations: [a]\n", 1)),
			want: []issue{{"PACKAGE", "metadata.annotations", "", []string{"must be a mapping, found a list"}}},
		},
		{
			name: "an invalid values schema",
			yaml: stream(metadataDoc, packageDoc("", "  valuesSchema:\n    openAPIv3:\n      type: object\n      properties:\n        port:\n          type: integer\n          default: eighty\n")),
			want: []issue{{"VALUES_SCHEMA", "spec.valuesSchema.openAPIv3", "", []string{"is not a valid OpenAPI v3 schema", "value must be an integer"}}},
		},
		{
			name: "a values schema with an unknown type",
			yaml: stream(metadataDoc, packageDoc("", "  valuesSchema:\n    openAPIv3:\n      type: strin\n")),
			want: []issue{{"VALUES_SCHEMA", "spec.valuesSchema.openAPIv3", "", []string{`unsupported 'type' value "strin"`}}},
		},
		{
			name: "a values schema of the wrong shape",
			yaml: stream(metadataDoc, packageDoc("", "  valuesSchema:\n    openAPIv3:\n      type: object\n      required: regions\n")),
			want: []issue{{"VALUES_SCHEMA", "spec.valuesSchema.openAPIv3", "", []string{"is not an OpenAPI v3 schema", "required"}}},
		},
		{
			name: "a values schema referring elsewhere",
			yaml: stream(metadataDoc, packageDoc("", "  valuesSchema:\n    openAPIv3:\n      $ref: '#/components/schemas/values'\n")),
			want: []issue{{"VALUES_SCHEMA", "spec.valuesSchema.openAPIv3", "", []string{"unresolved ref"}}},
		},
		{
			name: "a null where a sub-schema belongs (found by fuzzing: the validator dereferenced it)",
			yaml: []byte("kind: Package\nspec:\n  valuesSchema:\n   openAPIv3: \n    properties:\n     0:"),
			want: []issue{
				{"PACKAGE", "package.yml document 1 (Package)", "", []string{"a Carvel Package is packaging.carvel.dev/v1alpha1"}},
				{"PACKAGE", "package.yml", "", []string{"no PackageMetadata"}},
				{"VALUES_SCHEMA", "spec.valuesSchema.openAPIv3", "", []string{"has null at properties.0, where a schema object is expected"}},
			},
		},
		{
			name: "a null sub-schema deep inside",
			yaml: stream(metadataDoc, packageDoc("", "  valuesSchema:\n    openAPIv3:\n      type: object\n      properties:\n        a:\n          type: array\n          items:\n            allOf: [{type: string}, null]\n")),
			want: []issue{{"VALUES_SCHEMA", "spec.valuesSchema.openAPIv3", "", []string{"has null at properties.a.items.allOf[1]"}}},
		},
		{
			name: "a valuesSchema without openAPIv3",
			yaml: stream(metadataDoc, packageDoc("", "  valuesSchema:\n    other: {}\n")),
			want: []issue{{"VALUES_SCHEMA", "spec.valuesSchema.openAPIv3", "", []string{"is missing"}}},
		},
		{
			name: "a values schema that is not a mapping",
			yaml: stream(metadataDoc, packageDoc("", "  valuesSchema:\n    openAPIv3: [1, 2]\n")),
			want: []issue{{"VALUES_SCHEMA", "spec.valuesSchema.openAPIv3", "", []string{"must be a mapping", "found a list"}}},
		},
		{
			name: "a values schema may use aliases anchored elsewhere in the document",
			yaml: stream(metadataDoc, "x-defs: &port {type: integer, default: 8080}\n"+packageDoc("",
				"  valuesSchema:\n    openAPIv3:\n      type: object\n      properties:\n        http: *port\n        https: *port\n")),
		},
		{
			name: "a values schema nested too deep",
			yaml: stream(metadataDoc, packageDoc("", "  valuesSchema:\n    openAPIv3: "+strings.Repeat("{properties: {a: ", 40)+"{}"+strings.Repeat("}}", 40)+"\n")),
			want: []issue{{"VALUES_SCHEMA", "spec.valuesSchema.openAPIv3", "", []string{"nested deeper than 64 levels"}}},
		},
		{
			name: "a values schema with too many entries",
			yaml: stream(metadataDoc, packageDoc("", "  valuesSchema:\n    openAPIv3:\n      type: object\n      enum: ["+strings.Repeat("1,", MaxSchemaEntries)+"1]\n")),
			want: []issue{{"VALUES_SCHEMA", "spec.valuesSchema.openAPIv3", "", []string{"more than 50000 entries"}}},
		},
		{
			name: "a values schema built by alias expansion (billion laughs)",
			yaml: stream(metadataDoc, "d: &d {type: object, properties: {a: {type: string}}}\n"+
				"e: &e {type: object, properties: {a: *d, b: *d, c: *d, d: *d, e: *d, f: *d, g: *d, h: *d}}\n"+
				"f: &f {type: object, properties: {a: *e, b: *e, c: *e, d: *e, e: *e, f: *e, g: *e, h: *e}}\n"+
				"g: &g {type: object, properties: {a: *f, b: *f, c: *f, d: *f, e: *f, f: *f, g: *f, h: *f}}\n"+
				"h: &h {type: object, properties: {a: *g, b: *g, c: *g, d: *g, e: *g, f: *g, g: *g, h: *g}}\n"+
				packageDoc("", "  valuesSchema:\n    openAPIv3: {type: object, properties: {a: *h, b: *h, c: *h, d: *h, e: *h, f: *h, g: *h, h: *h}}\n")),
			want: []issue{{"VALUES_SCHEMA", "spec.valuesSchema.openAPIv3", "", []string{"excessive aliasing"}}},
		},
		{
			name: "every supported kind at its supported API version passes",
			yaml: stream(metadataDoc, packageDoc("", "")),
			resources: func() []Resource {
				var rs []Resource
				for _, k := range []string{"SupervisorService", "SupervisorRegistry", "Overlay", "GlobalRole", "Role", "RightBundle",
					"VcfaServiceAccount", "VcServiceAccount", "ApiExtension", "ApiExtensionProxy", "RelyingParty", "UserInterfacePlugin", "RdeBundle"} {
					rs = append(rs, Resource{APIVersion: ServicesAPIVersion, Kind: k, Name: strings.ToLower(k)})
				}
				return append(rs, Resource{APIVersion: "v1", Kind: "Secret", Name: "creds"})
			}(),
		},
		{
			name: "unsupported kinds and API versions are reported per resource",
			yaml: stream(metadataDoc, packageDoc("", "")),
			resources: []Resource{
				{APIVersion: ServicesAPIVersion, Kind: "SupervisorService", Name: "ok"},
				{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"},
				{APIVersion: "services.vcfa.broadcom.com/v1", Kind: "SupervisorService", Name: "old"},
				{APIVersion: ServicesAPIVersion, Kind: "Secret", Name: "s"},
				{APIVersion: ServicesAPIVersion, Kind: "Widget", Name: "w"},
				{APIVersion: "v1", Name: "nokind"},
			},
			want: []issue{
				{"RESOURCE_KIND", `resources[1] (ConfigMap "cm")`, "ConfigMap", []string{"may not render", "SupervisorService", "Secret (v1)"}},
				{"API_VERSION", `resources[2] (SupervisorService "old")`, "services.vcfa.broadcom.com/v1", []string{"supported version of SupervisorService is services.vcfa.broadcom.com/v2"}},
				{"API_VERSION", `resources[3] (Secret "s")`, ServicesAPIVersion, []string{"a Secret must be apiVersion v1"}},
				{"RESOURCE_KIND", `resources[4] (Widget "w")`, "Widget", []string{"may not render"}},
				{"RESOURCE_KIND", `resources[5] (resource "nokind")`, "", []string{"has no kind"}},
			},
		},
		{
			name:      "built-in services skip the static checks",
			yaml:      stream(metadataDoc, packageDoc("", "  valuesSchema:\n    openAPIv3:\n      type: strin\n")),
			resources: []Resource{{APIVersion: "v1", Kind: "ConfigMap", Name: "cm"}},
			builtIn:   true,
		},
		{
			name: "built-in services still get their expressions validated",
			yaml: stream(metadataDoc, packageDoc("    appplatform.vmware.com/supervisor-version-constraints: \"9.x\"\n", "")),
			want: []issue{{"SUPERVISOR_VERSION", compat.SourceSupervisorVersion, "9.x", []string{"no wildcards"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := v.Validate(context.Background(), Request{PackageYAML: tt.yaml, Resources: tt.resources, BuiltIn: tt.builtIn})
			require.NoError(t, err)
			require.Len(t, res.Issues, len(tt.want), "issues: %+v", res.Issues)
			require.Equal(t, len(tt.want) == 0, res.Valid)
			for i, w := range tt.want {
				got := res.Issues[i]
				require.Equal(t, w.kind, got.Kind, "issue %d", i)
				require.Equal(t, w.source, got.Source, "issue %d", i)
				require.Equal(t, w.expression, got.Expression, "issue %d", i)
				for _, s := range w.says {
					require.Contains(t, got.Message, s, "issue %d", i)
				}
			}
			require.Equal(t, tt.builtIn, res.Package.BuiltIn)
		})
	}
}

func TestValidateRejectsWhatCannotBeAnalysed(t *testing.T) {
	v := newValidator(t)
	tests := []struct {
		name string
		yaml []byte
		says string
	}{
		{"empty", nil, "package_yaml is empty"},
		{"blank", []byte("  \n\n"), "package_yaml is empty"},
		{"not YAML", []byte("apiVersion: v1\nkind: [Package\n"), "document 1 is not valid YAML"},
		{"YAML error in a later document", stream(metadataDoc, "kind: Package\n  bad: indent\n"), "document 2 is not valid YAML"},
		{"a scalar document", []byte("hello\n"), "document 1 is the str hello, not a Kubernetes object"},
		{"a list document", stream(metadataDoc, "- a\n- b\n"), "document 2 is a list, not a Kubernetes object"},
		{"no Package", stream(metadataDoc), "no Package document"},
		{"two Packages", stream(packageDoc("", ""), metadataDoc, packageDoc("", "")), "2 Package documents (documents 1, 3)"},
		{"too large", append([]byte("# "), make([]byte, MaxPackageBytes)...), "more than the"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := v.Validate(context.Background(), Request{PackageYAML: tt.yaml})
			require.ErrorIs(t, err, ErrInvalidPackage)
			require.Contains(t, err.Error(), tt.says)
		})
	}
}

func TestValidatorPanicsBecomeSchemaIssues(t *testing.T) {
	// This input makes kin-openapi v0.153.0 dereference a nil sub-schema;
	// Validate catches it earlier (nullSchema), this is the last line.
	msg := validateSchema(context.Background(), []byte(`{"properties":{"a":null}}`))
	require.Contains(t, msg, "could not be validated: the OpenAPI validator failed on it")
}
