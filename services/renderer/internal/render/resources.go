package render

import (
	"fmt"
	"sort"
	"strings"

	"carvel.dev/ytt/pkg/yamlmeta"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
)

// What config/ may render (filesystem-layout.md, packaging-and-build.md).
const (
	ServicesAPIVersion = "services.vcfa.broadcom.com/v2"
	NameLabel          = "services.vcfa.broadcom.com/name"
	secretAPIVersion   = "v1"
	secretKind         = "Secret"
)

// serviceKinds are the services.vcfa.broadcom.com/v2 kinds a VCF Service may
// contain, as packaging-and-build.md lists them.
var serviceKinds = []string{
	"SupervisorService", "SupervisorRegistry", "Overlay", "GlobalRole", "Role",
	"RightBundle", "VcfaServiceAccount", "VcServiceAccount", "ApiExtension",
	"ApiExtensionProxy", "RelyingParty", "UserInterfacePlugin", "RdeBundle",
}

// resource is one rendered document with the fields the renderer reads.
type resource struct {
	proto *commonv1.Resource
	// object is the document as JSON-shaped Go values.
	object map[string]any
}

// checkResources checks every rendered document against the rules of a VCF
// Service and describes it. All violations are reported at once.
func checkResources(docs []*yamlmeta.Document) ([]resource, error) {
	allowed := map[string]bool{}
	for _, k := range serviceKinds {
		allowed[k] = true
	}
	var (
		out        []resource
		violations []Violation
		seen       = map[string]int{}
	)
	for i, doc := range docs {
		where := fmt.Sprintf("documents[%d]", i)
		object, ok := plainValue(doc).(map[string]any)
		if !ok {
			violations = append(violations, Violation{Path: where, Rule: fmt.Sprintf("expected a resource (a map), got %s", yamlmeta.TypeName(doc.Value))})
			continue
		}
		apiVersion, _ := object["apiVersion"].(string)
		kind, _ := object["kind"].(string)
		isServiceKind := apiVersion == ServicesAPIVersion && allowed[kind]
		isSecret := apiVersion == secretAPIVersion && kind == secretKind
		if !isServiceKind && !isSecret {
			violations = append(violations, Violation{Path: where, Rule: fmt.Sprintf(
				"kind %q (apiVersion %q) is not allowed: a VCF Service renders only %s kinds (%s) and %s %s",
				kind, apiVersion, ServicesAPIVersion, strings.Join(serviceKinds, ", "), secretAPIVersion, secretKind)})
			continue
		}
		labels, err := stringMap(dig(object, "metadata", "labels"))
		if err != nil {
			violations = append(violations, Violation{Path: where + ".metadata.labels", Rule: err.Error()})
			continue
		}
		name := labels[NameLabel]
		if name == "" && kind == secretKind {
			name = firstString(dig(object, "metadata", "name"), dig(object, "metadata", "generateName"))
		}
		if name == "" {
			rule := fmt.Sprintf("%s has no %s label: element resources are identified by it (element-types-overview.md)", kind, NameLabel)
			if kind == secretKind {
				rule = fmt.Sprintf("Secret has no %s label, metadata.name or metadata.generateName", NameLabel)
			}
			violations = append(violations, Violation{Path: where, Rule: rule})
			continue
		}
		region, _ := dig(object, "spec", "region").(string)
		supervisor, _ := dig(object, "spec", "supervisor").(string)
		identity := strings.Join([]string{kind, region, supervisor, name}, "\x00")
		if first, dup := seen[identity]; dup {
			violations = append(violations, Violation{Path: where, Rule: fmt.Sprintf(
				"%s %q%s duplicates documents[%d]: names must be unique per kind, region and supervisor",
				kind, name, placement(region, supervisor), first)})
			continue
		}
		seen[identity] = i
		text, err := yamlText(doc)
		if err != nil {
			return nil, err
		}
		out = append(out, resource{
			object: object,
			proto: &commonv1.Resource{
				ApiVersion: apiVersion,
				Kind:       kind,
				Name:       name,
				Labels:     labels,
				Region:     region,
				Supervisor: supervisor,
				Yaml:       text,
				Index:      int32(i),
			},
		})
	}
	if len(violations) > 0 {
		return nil, &Error{Kind: ErrInvalidInput, Layer: LayerConfig, Violations: violations}
	}
	return out, nil
}

func placement(region, supervisor string) string {
	switch {
	case region != "" && supervisor != "":
		return fmt.Sprintf(" on supervisor %q of region %q", supervisor, region)
	case supervisor != "":
		return fmt.Sprintf(" on supervisor %q", supervisor)
	case region != "":
		return fmt.Sprintf(" in region %q", region)
	}
	return ""
}

// dig follows map keys through JSON-shaped values.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func firstString(values ...any) string {
	for _, v := range values {
		if s, ok := v.(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func stringMap(v any) (map[string]string, error) {
	if v == nil {
		return map[string]string{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("expected a map of strings, got %s", jsonType(v))
	}
	out := make(map[string]string, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s, ok := m[k].(string)
		if !ok {
			return nil, fmt.Errorf("label %q is %s; label values are strings (quote it)", k, jsonType(m[k]))
		}
		out[k] = s
	}
	return out, nil
}
