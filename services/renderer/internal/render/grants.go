package render

import (
	"fmt"
	"sort"

	"google.golang.org/protobuf/types/known/structpb"
)

// grantRule derives one kind of access grant from one resource kind; the
// rules follow api.md's AccessGrants schema and the element-type docs.
type grantRule struct {
	Kind     string
	Category string
	Key      string
	// Field is where the grant's value comes from, e.g. spec.roleName.
	Field string
	// extract reads the grant's values from a rendered resource.
	extract func(object map[string]any) ([]string, error)
}

// grantRules is the complete table, in api.md's order.
var grantRules = []grantRule{
	{Kind: "VcServiceAccount", Category: "vCenter", Key: "Role", Field: "spec.roleName", extract: requiredString("spec", "roleName")},
	{Kind: "GlobalRole", Category: "VCF Automation", Key: "GlobalRole", Field: "spec.name", extract: requiredString("spec", "name")},
	{Kind: "Role", Category: "VCF Automation", Key: "Role", Field: "spec.name", extract: requiredString("spec", "name")},
	{Kind: "RightBundle", Category: "VCF Automation", Key: "RightBundle", Field: "spec.name", extract: requiredString("spec", "name")},
	{Kind: "RelyingParty", Category: "VCF Automation", Key: "RelyingParty", Field: "spec.redirectUris", extract: redirectURIs},
	{Kind: "VcfaServiceAccount", Category: "VCF Automation", Key: "VcfaServiceAccount", Field: "spec.clientName", extract: requiredString("spec", "clientName")},
	{Kind: "ApiExtensionProxy", Category: "VCF Automation", Key: "ApiExtensionProxy", Field: "spec.name", extract: requiredString("spec", "name")},
	{Kind: "SupervisorService", Category: "Supervisor", Key: "ManagementService", Field: "spec.access[].managementService", extract: managementServices},
}

// AccessGrants is api.md's AccessGrants object: category → key → sorted,
// unique values. Categories and keys appear only when they hold a value.
type AccessGrants map[string]map[string][]string

// Struct returns the grants as a google.protobuf.Struct.
func (g AccessGrants) Struct() (*structpb.Struct, error) {
	out := map[string]any{}
	for category, keys := range g {
		inner := map[string]any{}
		for key, values := range keys {
			list := make([]any, len(values))
			for i, v := range values {
				list[i] = v
			}
			inner[key] = list
		}
		out[category] = inner
	}
	return structpb.NewStruct(out)
}

// deriveGrants applies grantRules to the rendered resources.
func deriveGrants(resources []resource) (AccessGrants, error) {
	rules := map[string]grantRule{}
	for _, r := range grantRules {
		rules[r.Kind] = r
	}
	sets := map[string]map[string]map[string]bool{}
	var violations []Violation
	for _, res := range resources {
		if res.proto.GetApiVersion() != ServicesAPIVersion {
			continue
		}
		rule, ok := rules[res.proto.GetKind()]
		if !ok {
			continue
		}
		values, err := rule.extract(res.object)
		if err != nil {
			violations = append(violations, Violation{
				Path: fmt.Sprintf("documents[%d]", res.proto.GetIndex()),
				Rule: fmt.Sprintf("%s %q: %s: %v (its access grant comes from it)", rule.Kind, res.proto.GetName(), rule.Field, err),
			})
			continue
		}
		for _, v := range values {
			if sets[rule.Category] == nil {
				sets[rule.Category] = map[string]map[string]bool{}
			}
			if sets[rule.Category][rule.Key] == nil {
				sets[rule.Category][rule.Key] = map[string]bool{}
			}
			sets[rule.Category][rule.Key][v] = true
		}
	}
	if len(violations) > 0 {
		return nil, &Error{Kind: ErrInvalidInput, Layer: LayerConfig, Violations: violations}
	}
	grants := AccessGrants{}
	for category, keys := range sets {
		grants[category] = map[string][]string{}
		for key, set := range keys {
			values := make([]string, 0, len(set))
			for v := range set {
				values = append(values, v)
			}
			sort.Strings(values)
			grants[category][key] = values
		}
	}
	return grants, nil
}

func requiredString(keys ...string) func(map[string]any) ([]string, error) {
	return func(object map[string]any) ([]string, error) {
		v := dig(object, keys...)
		s, ok := v.(string)
		if !ok || s == "" {
			return nil, missingOrWrong(v, "a non-empty string")
		}
		return []string{s}, nil
	}
}

func redirectURIs(object map[string]any) ([]string, error) {
	v := dig(object, "spec", "redirectUris")
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, missingOrWrong(v, "a non-empty list of URIs")
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("item %d: %w", i, missingOrWrong(item, "a non-empty string"))
		}
		out = append(out, s)
	}
	return out, nil
}

// managementServices reads SupervisorService.spec.access; the field is
// optional, an access entry without a managementService is not.
func managementServices(object map[string]any) ([]string, error) {
	v := dig(object, "spec", "access")
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, missingOrWrong(v, "a list")
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		ms := dig(item, "managementService")
		s, ok := ms.(string)
		if !ok || s == "" {
			return nil, fmt.Errorf("item %d: managementService: %w", i, missingOrWrong(ms, "a non-empty string"))
		}
		out = append(out, s)
	}
	return out, nil
}

func missingOrWrong(v any, want string) error {
	if v == nil {
		return fmt.Errorf("missing; expected %s", want)
	}
	return fmt.Errorf("expected %s, got %s", want, jsonType(v))
}
