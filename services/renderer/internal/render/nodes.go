package render

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"

	"carvel.dev/ytt/pkg/filepos"
	"carvel.dev/ytt/pkg/yamlmeta"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The renderer keeps values as ytt's own YAML nodes (yamlmeta Map, Array,
// scalars) from the inventory to the templates, so that nothing is printed
// and re-parsed between layers. These helpers convert to and from nodes.

// protoNode converts a protobuf message into YAML nodes with the field
// names and omission rules of protojson (lowerCamelCase names, unset
// fields left out), so that a transpiler sees api.md's Inventory shape.
// Map entries are sorted by key.
func protoNode(m protoreflect.Message) *yamlmeta.Map {
	out := &yamlmeta.Map{Position: filepos.NewUnknownPosition()}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		out.Items = append(out.Items, mapItem(fd.JSONName(), protoFieldNode(fd, m.Get(fd))))
	}
	return out
}

func protoFieldNode(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch {
	case fd.IsList():
		list := v.List()
		out := &yamlmeta.Array{Position: filepos.NewUnknownPosition()}
		for i := 0; i < list.Len(); i++ {
			out.Items = append(out.Items, arrayItem(protoScalarNode(fd, list.Get(i))))
		}
		return out
	case fd.IsMap():
		entries := map[string]protoreflect.Value{}
		var keys []string
		v.Map().Range(func(k protoreflect.MapKey, val protoreflect.Value) bool {
			key := k.String()
			keys = append(keys, key)
			entries[key] = val
			return true
		})
		sort.Strings(keys)
		out := &yamlmeta.Map{Position: filepos.NewUnknownPosition()}
		for _, k := range keys {
			out.Items = append(out.Items, mapItem(k, protoScalarNode(fd.MapValue(), entries[k])))
		}
		return out
	default:
		return protoScalarNode(fd, v)
	}
}

func protoScalarNode(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return protoNode(v.Message())
	case protoreflect.StringKind:
		return v.String()
	case protoreflect.BoolKind:
		return v.Bool()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return int(v.Int())
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if u := v.Uint(); u <= math.MaxInt64 {
			return int(u)
		}
		return v.Uint()
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return v.Float()
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return int(v.Enum())
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes())
	default:
		return v.Interface()
	}
}

func mapItem(key, value any) *yamlmeta.MapItem {
	return &yamlmeta.MapItem{Key: key, Value: value, Position: filepos.NewUnknownPosition()}
}

func arrayItem(value any) *yamlmeta.ArrayItem {
	return &yamlmeta.ArrayItem{Value: value, Position: filepos.NewUnknownPosition()}
}

// goNode converts JSON-shaped Go values (map[string]any, []any, scalars) to
// YAML nodes. Map keys are sorted; whole floats become integers, as YAML
// would read them back.
func goNode(v any) any {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := &yamlmeta.Map{Position: filepos.NewUnknownPosition()}
		for _, k := range keys {
			out.Items = append(out.Items, mapItem(k, goNode(t[k])))
		}
		return out
	case []any:
		out := &yamlmeta.Array{Position: filepos.NewUnknownPosition()}
		for _, item := range t {
			out.Items = append(out.Items, arrayItem(goNode(item)))
		}
		return out
	case float64:
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return int(t)
		}
		return t
	default:
		return v
	}
}

// plainValue converts YAML nodes to JSON-shaped Go values (map[string]any,
// []any, scalars), the form schema validators and structpb understand.
// Non-string map keys are written with fmt's %v.
func plainValue(node any) any {
	switch t := node.(type) {
	case *yamlmeta.Document:
		return plainValue(t.Value)
	case *yamlmeta.Map:
		out := make(map[string]any, len(t.Items))
		for _, item := range t.Items {
			out[keyString(item.Key)] = plainValue(item.Value)
		}
		return out
	case *yamlmeta.Array:
		out := make([]any, 0, len(t.Items))
		for _, item := range t.Items {
			out = append(out, plainValue(item.Value))
		}
		return out
	default:
		return t
	}
}

func keyString(k any) string {
	if s, ok := k.(string); ok {
		return s
	}
	return fmt.Sprint(k)
}

// mapValue returns the value of key in a map node.
func mapValue(m *yamlmeta.Map, key string) (any, bool) {
	for _, item := range m.Items {
		if keyString(item.Key) == key {
			return item.Value, true
		}
	}
	return nil, false
}

// withoutKey returns a copy of the document without one top-level key.
func withoutKey(doc *yamlmeta.Document, key string) *yamlmeta.Document {
	m, ok := doc.Value.(*yamlmeta.Map)
	if !ok {
		return doc
	}
	out := &yamlmeta.Map{Position: m.Position}
	for _, item := range m.Items {
		if keyString(item.Key) == key {
			continue
		}
		out.Items = append(out.Items, item)
	}
	return newDocument(out)
}

// leaf is one scalar (or empty collection) of a values document, with its
// path (regions[0].hostSupervisor.name) and its value as compact JSON.
type leaf struct {
	path  string
	value string
}

// leaves lists the leaves of a node in document order.
func leaves(node any) []leaf {
	var out []leaf
	walkLeaves(node, "", &out)
	return out
}

func walkLeaves(node any, path string, out *[]leaf) {
	switch t := node.(type) {
	case *yamlmeta.Document:
		walkLeaves(t.Value, path, out)
	case *yamlmeta.Map:
		if len(t.Items) == 0 {
			*out = append(*out, leaf{path: path, value: "{}"})
			return
		}
		for _, item := range t.Items {
			walkLeaves(item.Value, joinKey(path, keyString(item.Key)), out)
		}
	case *yamlmeta.Array:
		if len(t.Items) == 0 {
			*out = append(*out, leaf{path: path, value: "[]"})
			return
		}
		for i, item := range t.Items {
			walkLeaves(item.Value, path+"["+strconv.Itoa(i)+"]", out)
		}
	default:
		*out = append(*out, leaf{path: path, value: scalarJSON(t)})
	}
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_/-]+$`)

// joinKey appends a map key to a dotted path; keys that would make the path
// ambiguous are written as ["key"].
func joinKey(path, key string) string {
	if !plainKey.MatchString(key) {
		quoted, _ := json.Marshal(key)
		return path + "[" + string(quoted) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func scalarJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", fmt.Sprint(v))
	}
	return string(b)
}

// stripMeta removes comments and annotations from a layer's output. Nodes
// an overlay inserted keep the overlay's `#@` comments, and ytt refuses to
// merge such a document as plain data values later on.
func stripMeta(node any) {
	n, ok := node.(yamlmeta.Node)
	if !ok {
		return
	}
	n.SetComments(nil)
	n.SetAnnotations(nil)
	for _, v := range n.GetValues() {
		stripMeta(v)
	}
}
