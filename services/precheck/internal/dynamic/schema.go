package dynamic

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"strings"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
)

// The API of the element types, and the label that identifies them
// (element-types-overview.md).
const (
	elementAPIVersion = "services.vcfa.broadcom.com/v2"
	nameLabel         = "services.vcfa.broadcom.com/name"
)

// Kinds with kind-specific checks or rules.
const (
	kindSupervisorService   = "SupervisorService"
	kindUserInterfacePlugin = "UserInterfacePlugin"
	kindOverlay             = "Overlay"
	kindSecret              = "Secret"
)

type fieldType int

const (
	tString fieldType = iota
	tBool
	tList
	tStringList
	tObject
)

func (t fieldType) String() string {
	switch t {
	case tString:
		return "a string"
	case tBool:
		return "a boolean"
	case tList:
		return "a list"
	case tStringList:
		return "a list of strings"
	default:
		return "an object"
	}
}

// field is one spec field of an element type.
type field struct {
	name     string
	typ      fieldType
	required bool
}

func req(name string, t fieldType) field { return field{name: name, typ: t, required: true} }
func opt(name string, t fieldType) field { return field{name: name, typ: t} }

// elementSpecs are the spec fields of every element type, one row per
// "Spec Fields" table of element-types/*.md. Required strings and lists
// must also be non-empty.
var elementSpecs = map[string][]field{
	"SupervisorService": {req("region", tString), req("supervisor", tString), req("package", tObject), req("packageMetadata", tObject),
		opt("values", tObject), opt("access", tList), opt("readyConditions", tList)},
	"SupervisorRegistry": {req("region", tString), req("supervisor", tString), req("endpoint", tString),
		opt("certificates", tString), opt("username", tString), opt("password", tObject), opt("defaultRegistry", tBool)},
	"Overlay":     {req("data", tObject), req("overlay", tString)},
	"GlobalRole":  {req("name", tString), opt("description", tString), opt("rights", tStringList), opt("scope", tObject)},
	"Role":        {req("name", tString), opt("description", tString), opt("rights", tStringList), opt("organization", tString)},
	"RightBundle": {req("name", tString), opt("description", tString), opt("rights", tStringList), opt("scope", tObject)},
	"VcfaServiceAccount": {req("clientName", tString), req("roleName", tString), req("selector", tObject),
		opt("name", tString), opt("uri", tString), opt("softwareId", tString), opt("softwareVersion", tString)},
	"VcServiceAccount": {req("username", tString), req("roleName", tString), req("groups", tStringList),
		opt("passwordExpires", tBool), opt("region", tString), opt("vcenter", tString), opt("password", tObject)},
	"ApiExtension": {req("name", tString), req("vendor", tString), req("version", tString), req("tokenConfig", tObject), req("urlMatchers", tList)},
	"ApiExtensionProxy": {req("name", tString), req("vendor", tString), req("version", tString), req("rootUrl", tString),
		opt("enabled", tBool), opt("urlMatchers", tList)},
	"RelyingParty":        {req("name", tString), req("isPublic", tBool), req("redirectUris", tStringList), req("selector", tObject)},
	"UserInterfacePlugin": {req("image", tString), opt("enabled", tBool), opt("scope", tObject), opt("allowMultipleVersions", tBool)},
	"RdeBundle":           {req("image", tString)},
}

// schemaCheck validates the document against its kind's schema.
func schemaCheck(res *resource) *commonv1.Check {
	if res.kind == kindSecret {
		return secretSchemaCheck(res)
	}
	fields, known := elementSpecs[res.kind]
	if !known {
		return failed(CheckSchemaValidation, fmt.Sprintf("kind %q is not an element type of %s (known: %s); only those and Secret may be rendered",
			res.kind, elementAPIVersion, strings.Join(knownKinds(), ", ")))
	}
	var problems, notes []string
	if res.apiVersion != elementAPIVersion {
		problems = append(problems, fmt.Sprintf("apiVersion is %q; %s is served as %s", res.apiVersion, res.kind, elementAPIVersion))
	}
	if v, _ := str(res.doc, "metadata", "labels", nameLabel); v == "" {
		problems = append(problems, fmt.Sprintf("metadata.labels[%s] is required: it identifies the resource", nameLabel))
	}
	spec, ok := obj(res.doc, "spec")
	if !ok {
		problems = append(problems, "spec is required and must be an object")
	} else {
		problems = append(problems, checkFields(spec, fields)...)
		for k := range spec {
			if !slices.ContainsFunc(fields, func(f field) bool { return f.name == k }) {
				notes = append(notes, fmt.Sprintf("spec.%s is not a field of %s and is ignored", k, res.kind))
			}
		}
		slices.Sort(notes)
	}
	switch {
	case len(problems) > 0:
		return failed(CheckSchemaValidation, strings.Join(append(problems, notes...), "; "))
	case len(notes) > 0:
		return warning(CheckSchemaValidation, strings.Join(notes, "; "))
	}
	return passed(CheckSchemaValidation, fmt.Sprintf("%s spec has its required fields (%s) with the documented types", res.kind, requiredNames(fields)))
}

func checkFields(spec map[string]any, fields []field) []string {
	var problems []string
	for _, f := range fields {
		v, present := spec[f.name]
		if !present || v == nil {
			if f.required {
				problems = append(problems, fmt.Sprintf("spec.%s is required (%s)", f.name, f.typ))
			}
			continue
		}
		if !hasType(v, f.typ) {
			problems = append(problems, fmt.Sprintf("spec.%s must be %s", f.name, f.typ))
			continue
		}
		if f.required && empty(v) {
			problems = append(problems, fmt.Sprintf("spec.%s must not be empty", f.name))
		}
	}
	return problems
}

func hasType(v any, t fieldType) bool {
	switch t {
	case tString:
		_, ok := v.(string)
		return ok
	case tBool:
		_, ok := v.(bool)
		return ok
	case tList:
		_, ok := v.([]any)
		return ok
	case tStringList:
		l, ok := v.([]any)
		if !ok {
			return false
		}
		for _, e := range l {
			if _, ok := e.(string); !ok {
				return false
			}
		}
		return true
	default:
		_, ok := v.(map[string]any)
		return ok
	}
}

func empty(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x) == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func requiredNames(fields []field) string {
	var out []string
	for _, f := range fields {
		if f.required {
			out = append(out, f.name)
		}
	}
	return strings.Join(out, ", ")
}

func knownKinds() []string {
	out := make([]string, 0, len(elementSpecs))
	for k := range elementSpecs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// secretKey is a valid Secret data key (Kubernetes: [-._a-zA-Z0-9]+).
var secretKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// secretSchemaCheck validates a core v1 Secret.
func secretSchemaCheck(res *resource) *commonv1.Check {
	var problems []string
	if res.apiVersion != "v1" {
		problems = append(problems, fmt.Sprintf("apiVersion is %q; Secret is served as v1", res.apiVersion))
	}
	name, _ := str(res.doc, "metadata", "name")
	gen, _ := str(res.doc, "metadata", "generateName")
	if name == "" && gen == "" {
		problems = append(problems, "metadata.name or metadata.generateName is required")
	}
	if v, ok := get(res.doc, "type"); ok {
		if _, isStr := v.(string); !isStr {
			problems = append(problems, "type must be a string")
		}
	}
	keys := 0
	for _, section := range []string{"data", "stringData"} {
		v, ok := get(res.doc, section)
		if !ok || v == nil {
			continue
		}
		m, isMap := v.(map[string]any)
		if !isMap {
			problems = append(problems, section+" must be a map of keys to strings")
			continue
		}
		sorted := make([]string, 0, len(m))
		for k := range m {
			sorted = append(sorted, k)
		}
		slices.Sort(sorted)
		for _, k := range sorted {
			keys++
			if !secretKey.MatchString(k) {
				problems = append(problems, fmt.Sprintf("%s key %q may only hold letters, digits, '-', '_' and '.'", section, k))
			}
			s, isStr := m[k].(string)
			switch {
			case !isStr:
				problems = append(problems, fmt.Sprintf("%s.%s must be a string", section, k))
			case section == "data":
				if _, err := base64.StdEncoding.DecodeString(s); err != nil {
					problems = append(problems, fmt.Sprintf("data.%s is not base64: %v (use stringData for plain text)", k, err))
				}
			}
		}
	}
	if len(problems) > 0 {
		return failed(CheckSchemaValidation, strings.Join(problems, "; "))
	}
	return passed(CheckSchemaValidation, fmt.Sprintf("v1 Secret with %d well-formed keys", keys))
}
