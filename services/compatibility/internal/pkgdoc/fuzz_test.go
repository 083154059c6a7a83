package pkgdoc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzPackageDocument: no input panics; every rejection is ErrInvalidPackage
// with a message; every issue has a kind and a message; valid means no
// issues.
func FuzzPackageDocument(f *testing.F) {
	for _, name := range []string{"myservice-example-package.yml", "arcturus-constraints.yml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(stream(metadataDoc, packageDoc(
		"    appplatform.vmware.com/supervisor-version-constraints: \">9.0.0.0, <9.1.0.0\"\n"+
			"    appplatform.vmware.com/source-version-upgrade-constraints: \">=1.5.0 <2.0.0 || >=2.1.0\"\n"+
			"    appplatform.vmware.com/destination-version-upgrade-constraints: \"1.2.x\"\n",
		"  kubernetesVersionSelection:\n    constraints: \"~>9.0.1\"\n  valuesSchema:\n    openAPIv3:\n      type: strin\n")))
	f.Add([]byte("hello"))
	f.Add([]byte("---\n- a\n"))
	f.Add([]byte("a: &x [*x]\nkind: Package\n"))

	v := NewValidator(mustNewCache(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := v.Validate(context.Background(), Request{PackageYAML: data, Resources: []Resource{{APIVersion: "v1", Kind: "ConfigMap"}}})
		if err != nil {
			if !errors.Is(err, ErrInvalidPackage) || err.Error() == "" {
				t.Fatalf("rejection is not a clear ErrInvalidPackage: %v", err)
			}
			return
		}
		if res.Valid != (len(res.Issues) == 0) {
			t.Fatalf("valid=%v with %d issues", res.Valid, len(res.Issues))
		}
		for _, is := range res.Issues {
			if is.Kind == "" || is.Message == "" {
				t.Fatalf("issue without kind or message: %+v", is)
			}
		}
	})
}

// FuzzValuesSchema aims at the values-schema check alone, where a
// third-party validator runs on untrusted input: no panic, and a rejection
// is one VALUES_SCHEMA issue with a message.
func FuzzValuesSchema(f *testing.F) {
	for _, s := range []string{
		"type: object\nproperties:\n  regions:\n    type: array\n    items:\n      type: object\n      properties:\n        name: {type: string}\n",
		"type: strin", "properties: {a: null}", "allOf: [{type: string}, null]", "$ref: '#/x'",
		"type: object\nadditionalProperties: {type: integer, default: 3}", "type: string\npattern: '(['",
		"type: object\nproperties: {p: {type: integer, default: abc}}", "not: {type: string}\noneOf: [{}, {type: object}]",
		"type: [string, integer]", "type: object\nrequired: [a, a]", "type: number\nmultipleOf: 0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		var root yaml.Node
		doc := "spec:\n  valuesSchema:\n    openAPIv3:\n" + indentLines(schema, "      ")
		if err := yaml.Unmarshal([]byte(doc), &root); err != nil || len(root.Content) == 0 {
			return
		}
		issues := checkValuesSchema(context.Background(), root.Content[0])
		if len(issues) > 1 {
			t.Fatalf("more than one schema issue: %+v", issues)
		}
		for _, is := range issues {
			if is.Kind != IssueValuesSchema || is.Message == "" {
				t.Fatalf("bad issue: %+v", is)
			}
		}
	})
}

func indentLines(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix) + "\n"
}
