package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"

	"carvel.dev/ytt/pkg/yamlmeta"
	"github.com/getkin/kin-openapi/openapi3"
)

// valuesSchema is a package's spec.valuesSchema.openAPIv3, checked with
// kin-openapi (the library the compatibility service checks schemas with).
type valuesSchema struct {
	schema *openapi3.Schema
}

// loadValuesSchema reads the Package document of package.yml. A package
// without a valuesSchema gets no validation (nil, nil).
func loadValuesSchema(pkg []byte) (*valuesSchema, error) {
	docSet, err := parseYAML(packageFile, pkg)
	if err != nil {
		return nil, invalid(LayerBundle, packageFile, "invalid YAML: %v", err)
	}
	var packages []map[string]any
	for _, doc := range outputDocuments(docSet) {
		m, ok := plainValue(doc).(map[string]any)
		if ok && m["kind"] == "Package" {
			packages = append(packages, m)
		}
	}
	if len(packages) != 1 {
		return nil, invalid(LayerBundle, packageFile, "expected exactly one Package document, found %d", len(packages))
	}
	spec, _ := packages[0]["spec"].(map[string]any)
	vs, _ := spec["valuesSchema"].(map[string]any)
	raw, ok := vs["openAPIv3"]
	if !ok || raw == nil {
		return nil, nil
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return nil, invalid(LayerBundle, packageFile, "spec.valuesSchema.openAPIv3: %v", err)
	}
	schema := &openapi3.Schema{}
	if err := schema.UnmarshalJSON(data); err != nil {
		return nil, invalid(LayerBundle, packageFile, "spec.valuesSchema.openAPIv3 is not an OpenAPI v3 schema: %v", err)
	}
	if err := schema.Validate(context.Background()); err != nil {
		return nil, invalid(LayerBundle, packageFile, "spec.valuesSchema.openAPIv3 is not a valid OpenAPI v3 schema: %v", err)
	}
	return &valuesSchema{schema: schema}, nil
}

// check validates values (JSON-shaped) against the schema after filling in
// the schema's defaults, which it writes into values. Nested objects that
// are missing but have defaulted properties are created first, as ytt's own
// schemas do, so that `system.vcfDepotFqdn: {default: …}` appears even when
// no layer mentions `system`.
func (s *valuesSchema) check(values map[string]any) []Violation {
	materializeDefaults(s.schema, values, 0)
	err := s.schema.VisitJSON(values, openapi3.MultiErrors(), openapi3.VisitAsRequest(), openapi3.DefaultsSet(func() {}))
	if err == nil {
		return nil
	}
	var out []Violation
	collectViolations(err, values, &out)
	if len(out) == 0 {
		out = append(out, Violation{Rule: err.Error()})
	}
	return out
}

// maxSchemaDepth bounds the walk over schemas that refer to themselves.
const maxSchemaDepth = 32

func materializeDefaults(s *openapi3.Schema, value map[string]any, depth int) {
	if s == nil || depth > maxSchemaDepth {
		return
	}
	required := map[string]bool{}
	for _, name := range s.Required {
		required[name] = true
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ref := s.Properties[name]
		if ref == nil || ref.Value == nil {
			continue
		}
		prop := ref.Value
		child, present := value[name]
		// A required object stays missing, so that the check says so.
		if (!present || child == nil) && !required[name] && prop.Default == nil && hasNestedDefault(prop, depth+1) {
			child = map[string]any{}
			value[name] = child
		}
		switch typed := child.(type) {
		case map[string]any:
			materializeDefaults(prop, typed, depth+1)
		case []any:
			if prop.Items == nil || prop.Items.Value == nil {
				continue
			}
			for _, item := range typed {
				if m, ok := item.(map[string]any); ok {
					materializeDefaults(prop.Items.Value, m, depth+1)
				}
			}
		}
	}
}

func hasNestedDefault(s *openapi3.Schema, depth int) bool {
	if s == nil || depth > maxSchemaDepth {
		return false
	}
	if s.Type != nil && !s.Type.Permits(openapi3.TypeObject) {
		return false
	}
	for _, ref := range s.Properties {
		if ref == nil || ref.Value == nil {
			continue
		}
		if ref.Value.Default != nil || hasNestedDefault(ref.Value, depth+1) {
			return true
		}
	}
	return false
}

func collectViolations(err error, values any, out *[]Violation) {
	var multi openapi3.MultiError
	if errors.As(err, &multi) {
		for _, e := range multi {
			collectViolations(e, values, out)
		}
		return
	}
	var se *openapi3.SchemaError
	if !errors.As(err, &se) {
		*out = append(*out, Violation{Rule: err.Error()})
		return
	}
	*out = append(*out, Violation{Path: pointerPath(se.JSONPointer(), values), Rule: schemaRule(se)})
}

// schemaRule words a schema error as the rule that was violated, without
// echoing the value (it may be a password).
func schemaRule(se *openapi3.SchemaError) string {
	switch se.SchemaField {
	case "type":
		if se.Schema != nil && se.Schema.Type != nil {
			return fmt.Sprintf("expected %s, got %s", joinTypes(*se.Schema.Type), jsonType(se.Value))
		}
	case "required":
		return "required property is missing"
	}
	if se.Reason != "" {
		return se.Reason
	}
	return fmt.Sprintf("does not match the schema's %q", se.SchemaField)
}

func joinTypes(types openapi3.Types) string {
	switch len(types) {
	case 0:
		return "any"
	case 1:
		return types[0]
	}
	out := types[0]
	for _, t := range types[1:] {
		out += " or " + t
	}
	return out
}

func jsonType(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int, int64, uint64:
		return "integer"
	case float64:
		if t == math.Trunc(t) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// pointerPath turns a JSON pointer into the renderer's dotted path, writing
// list positions as [i].
func pointerPath(pointer []string, values any) string {
	path := ""
	cur := values
	for _, seg := range pointer {
		switch typed := cur.(type) {
		case []any:
			path += "[" + seg + "]"
			if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(typed) {
				cur = typed[i]
			} else {
				cur = nil
			}
		case map[string]any:
			path = joinKey(path, seg)
			cur = typed[seg]
		default:
			path = joinKey(path, seg)
			cur = nil
		}
	}
	return path
}

// mergeDefaults copies the values a schema check added (filled) into the
// YAML node tree, keeping the existing order and appending new keys in
// sorted order.
func mergeDefaults(node any, filled any) any {
	switch typed := node.(type) {
	case *yamlmeta.Map:
		fm, ok := filled.(map[string]any)
		if !ok {
			return node
		}
		present := map[string]bool{}
		for _, item := range typed.Items {
			key := keyString(item.Key)
			present[key] = true
			if f, ok := fm[key]; ok {
				item.Value = mergeDefaults(item.Value, f)
			}
		}
		keys := make([]string, 0, len(fm))
		for k := range fm {
			if !present[k] {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			typed.Items = append(typed.Items, mapItem(k, goNode(fm[k])))
		}
		return typed
	case *yamlmeta.Array:
		fa, ok := filled.([]any)
		if !ok || len(fa) != len(typed.Items) {
			return node
		}
		for i, item := range typed.Items {
			item.Value = mergeDefaults(item.Value, fa[i])
		}
		return typed
	case nil:
		if filled != nil {
			return goNode(filled)
		}
		return nil
	default:
		return node
	}
}
