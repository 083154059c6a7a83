package pkgdoc

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v3"
)

// ServicesAPIVersion is the API version of every VCF Service CR.
const ServicesAPIVersion = "services.vcfa.broadcom.com/v2"

// servicesKinds are the CR kinds a VCF Service may render
// (packaging-and-build.md, element-types overview).
var servicesKinds = map[string]bool{
	"SupervisorService": true, "SupervisorRegistry": true, "Overlay": true, "GlobalRole": true,
	"Role": true, "RightBundle": true, "VcfaServiceAccount": true, "VcServiceAccount": true,
	"ApiExtension": true, "ApiExtensionProxy": true, "RelyingParty": true,
	"UserInterfacePlugin": true, "RdeBundle": true,
}

// supportedKinds lists what may be rendered, for messages.
func supportedKinds() string {
	kinds := make([]string, 0, len(servicesKinds))
	for k := range servicesKinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return strings.Join(kinds, ", ") + " (" + ServicesAPIVersion + ") and Secret (v1)"
}

// checkResources checks every rendered resource is a supported kind at a
// supported API version.
func checkResources(resources []Resource) []Issue {
	var issues []Issue
	for i, r := range resources {
		source := resourceSource(i, r)
		switch {
		case r.Kind == "":
			issues = append(issues, Issue{Kind: IssueResourceKind, Source: source,
				Message: fmt.Sprintf("%s has no kind; a VCF Service may only render %s", source, supportedKinds())})
		case r.Kind == "Secret":
			if r.APIVersion != "v1" {
				issues = append(issues, Issue{Kind: IssueAPIVersion, Source: source, Expression: r.APIVersion,
					Message: fmt.Sprintf("%s has apiVersion %q; a Secret must be apiVersion v1", source, r.APIVersion)})
			}
		case servicesKinds[r.Kind]:
			if r.APIVersion != ServicesAPIVersion {
				issues = append(issues, Issue{Kind: IssueAPIVersion, Source: source, Expression: r.APIVersion,
					Message: fmt.Sprintf("%s has apiVersion %q; the supported version of %s is %s", source, r.APIVersion, r.Kind, ServicesAPIVersion)})
			}
		default:
			issues = append(issues, Issue{Kind: IssueResourceKind, Source: source, Expression: r.Kind,
				Message: fmt.Sprintf("%s is a %s (%s), which a VCF Service may not render; supported: %s",
					source, r.Kind, r.APIVersion, supportedKinds())})
		}
	}
	return issues
}

func resourceSource(i int, r Resource) string {
	name := r.Name
	if name == "" {
		name = "unnamed"
	}
	kind := r.Kind
	if kind == "" {
		kind = "resource"
	}
	return fmt.Sprintf("resources[%d] (%s %q)", i, kind, name)
}

const schemaSource = "spec.valuesSchema.openAPIv3"

// checkValuesSchema checks spec.valuesSchema.openAPIv3 is a valid OpenAPI
// v3 schema. A package without a values schema is allowed (Carvel makes it
// optional); one that is there must be valid, since the renderer validates
// every service's values against it.
func checkValuesSchema(ctx context.Context, root *yaml.Node) []Issue {
	vs := path(root, "spec", "valuesSchema")
	if isNull(vs) {
		return nil
	}
	issue := func(format string, args ...any) []Issue {
		return []Issue{{Kind: IssueValuesSchema, Source: schemaSource, Message: schemaSource + " " + fmt.Sprintf(format, args...)}}
	}
	if vs.Kind != yaml.MappingNode {
		return issue("must sit in a mapping spec.valuesSchema, found %s", describe(vs))
	}
	n := field(vs, "openAPIv3")
	if isNull(n) {
		return issue("is missing: spec.valuesSchema must hold the OpenAPI v3 schema of the service's values under openAPIv3")
	}
	if n.Kind != yaml.MappingNode {
		return issue("must be a mapping (an OpenAPI v3 schema object), found %s", describe(n))
	}
	var value any
	if err := n.Decode(&value); err != nil {
		return issue("cannot be read: %s", oneLine(err))
	}
	var entries int
	plain, err := jsonValue(value, 0, &entries)
	if err != nil {
		return issue("%v", err)
	}
	js, err := json.Marshal(plain)
	if err != nil {
		return issue("cannot be read as JSON: %s", oneLine(err))
	}
	if where := nullSchema(plain, ""); where != "" {
		return issue("has null at %s, where a schema object is expected", where)
	}
	if msg := validateSchema(ctx, js); msg != "" {
		return issue("%s", msg)
	}
	return nil
}

// validateSchema runs kin-openapi on the schema's JSON. It returns why the
// schema is not a valid OpenAPI v3 schema, or "".
func validateSchema(ctx context.Context, js []byte) (msg string) {
	// kin-openapi dereferences nil sub-schemas it produced itself (fuzzing
	// found one with a null under properties, which nullSchema now catches
	// first). A library panic must not take the service down or turn bad
	// input into an internal error: it is reported as an invalid schema.
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprintf("could not be validated: the OpenAPI validator failed on it (%v)", r)
		}
	}()
	// A SchemaRef, so a $ref is reported as the unresolvable reference it
	// is (a values schema stands alone: there are no components).
	var schema openapi3.SchemaRef
	if err := json.Unmarshal(js, &schema); err != nil {
		return "is not an OpenAPI v3 schema: " + oneLine(err)
	}
	if err := schema.Validate(ctx); err != nil {
		return "is not a valid OpenAPI v3 schema: " + oneLine(err)
	}
	return ""
}

// schemaMaps and schemaLists are the OpenAPI 3.0 keywords whose values
// hold sub-schemas.
var (
	schemaMaps   = map[string]bool{"properties": true}
	schemaSingle = map[string]bool{"items": true, "not": true, "additionalProperties": true}
	schemaLists  = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true}
)

// nullSchema returns the path of the first null standing where a schema
// must be, or "". Paths read like "properties.port.items".
func nullSchema(v any, at string) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	join := func(a, b string) string {
		if a == "" {
			return b
		}
		return a + "." + b
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic: the first null in key order
	for _, k := range keys {
		e, p := m[k], join(at, k)
		switch {
		case schemaSingle[k]:
			if e == nil {
				return p
			}
			if w := nullSchema(e, p); w != "" {
				return w
			}
		case schemaMaps[k]:
			sub, _ := e.(map[string]any)
			names := make([]string, 0, len(sub))
			for n := range sub {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, n := range names {
				if sub[n] == nil {
					return join(p, n)
				}
				if w := nullSchema(sub[n], join(p, n)); w != "" {
					return w
				}
			}
		case schemaLists[k]:
			list, _ := e.([]any)
			for i, s := range list {
				ip := fmt.Sprintf("%s[%d]", p, i)
				if s == nil {
					return ip
				}
				if w := nullSchema(s, ip); w != "" {
					return w
				}
			}
		}
	}
	return ""
}

// oneLine flattens a library error (kin-openapi appends indented schema
// dumps) into one bounded line.
func oneLine(err error) string {
	const max = 600
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Bounds of a values schema. Real schemas nest a handful of levels and
// hold hundreds of entries; the bounds keep validation time predictable
// (the schema validator slows down sharply on thousands of levels, and
// more than linearly with size).
const (
	MaxSchemaDepth   = 64
	MaxSchemaEntries = 50_000
)

// jsonValue turns a decoded YAML value into one encoding/json accepts
// (mapping keys become strings, as Kubernetes' YAML handling does) and
// enforces the bounds; entries counts the values seen.
func jsonValue(v any, depth int, entries *int) (any, error) {
	if depth > MaxSchemaDepth {
		return nil, fmt.Errorf("is nested deeper than %d levels", MaxSchemaDepth)
	}
	if *entries++; *entries > MaxSchemaEntries {
		return nil, fmt.Errorf("has more than %d entries", MaxSchemaEntries)
	}
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			c, err := jsonValue(e, depth+1, entries)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			c, err := jsonValue(e, depth+1, entries)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			c, err := jsonValue(e, depth+1, entries)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case float64:
		// JSON has no NaN or infinities; YAML does (.nan, .inf).
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return nil, fmt.Errorf("holds the number %v, which JSON Schema cannot express", t)
		}
		return t, nil
	default:
		return t, nil
	}
}
