package render

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"carvel.dev/ytt/pkg/template"
	"carvel.dev/ytt/pkg/template/core"
	"carvel.dev/ytt/pkg/yamlmeta"
	"carvel.dev/ytt/pkg/yamltemplate"
	yttoverlay "carvel.dev/ytt/pkg/yttlibrary/overlay"
	"github.com/k14s/starlark-go/starlark"
)

// A value layer (platformOverlay, vendorOverlay, userOverwrite) is
// base64-encoded YAML in one of two forms:
//
//   - plain YAML (no `#@` annotations) is merged over the layer's input the
//     way ytt merges a --data-values-file, except that a list whose items
//     are all maps with a `name` key merges item by item, matching on name
//     (an unknown name is appended). That makes api.md's example overwrite
//     `regions: [{name: us-west-1, hostSupervisor: {...}}]` change region
//     us-west-1 instead of replacing every region. Other lists are
//     replaced wholesale.
//   - a ytt template (it has `#@` annotations) is evaluated together with
//     the input document, exactly like `ytt -f input.yml -f layer.yml`:
//     its `#@overlay/match` documents edit the input (e.g. a provider's
//     scoping filter removing regions), and data.values holds the input
//     too. It must leave exactly one document.

// inputTemplate emits the layer's input document, handed over as data
// values so that it is never printed and re-parsed.
const inputTemplate = `#@ load("@ytt:data", "data")
#@ load("@ytt:struct", "struct")
--- #@ struct.decode(data.values)
`

// layerInput is the file name of the input document in a layer's ytt run;
// it sorts before every layer file name.
const layerInput = "__input__.yml"

// decodeLayer decodes a base64 layer. Line breaks and spaces (as `base64`
// wraps its output) are ignored. An empty layer returns nil.
func decodeLayer(layer, encoded string) ([]byte, error) {
	compact := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, encoded)
	if compact == "" {
		return nil, nil
	}
	data, err := base64.StdEncoding.DecodeString(compact)
	if err != nil {
		if raw, rawErr := base64.RawStdEncoding.DecodeString(compact); rawErr == nil {
			return raw, nil
		}
		return nil, invalid(layer, "", "invalid base64 (layers are base64-encoded YAML, as in api.md): %v", err)
	}
	return data, nil
}

// applyLayer applies a decoded layer to doc; an empty layer returns doc
// itself. doc is never modified.
func applyLayer(layer string, text []byte, doc *yamlmeta.Document) (*yamlmeta.Document, error) {
	if len(strings.TrimSpace(string(text))) == 0 {
		return doc, nil
	}
	docSet, err := parseYAML(layer+".yml", text)
	if err != nil {
		return nil, invalid(layer, "", "invalid YAML: %v", err)
	}
	if yamltemplate.HasTemplating(docSet) {
		return applyTemplateLayer(layer, text, doc)
	}
	out := doc
	for _, overwrite := range docSet.Items {
		if overwrite.IsEmpty() {
			continue
		}
		if _, ok := overwrite.Value.(*yamlmeta.Map); !ok {
			return nil, invalid(layer, "", "expected a map of values, got %s", yamlmeta.TypeName(overwrite.Value))
		}
		out, err = mergeByName(layer, out, overwrite)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func applyTemplateLayer(layer string, text []byte, doc *yamlmeta.Document) (*yamlmeta.Document, error) {
	lib, err := newLibrary(layer, []source{
		{path: layerInput, data: []byte(inputTemplate)},
		{path: layer + ".yml", data: text},
	})
	if err != nil {
		return nil, err
	}
	out, err := lib.run(doc)
	if err != nil {
		return nil, err
	}
	return singleDocument(layer, out)
}

// mergeByName merges a plain overwrite document over base with ytt's
// overlay engine, annotated as described at the top of this file.
func mergeByName(layer string, base, overwrite *yamlmeta.Document) (*yamlmeta.Document, error) {
	right := overwrite.DeepCopy()
	annotateMerge(right)
	op := yttoverlay.Op{
		Left:       &yamlmeta.DocumentSet{Items: []*yamlmeta.Document{base.DeepCopy()}},
		Right:      &yamlmeta.DocumentSet{Items: []*yamlmeta.Document{right}},
		Thread:     &starlark.Thread{Name: layer},
		ExactMatch: true,
	}
	var result any
	err := guard(layer, func() error {
		var err error
		result, err = op.Apply()
		return err
	})
	var re *Error
	if errors.As(err, &re) {
		return nil, err
	}
	if err != nil {
		return nil, invalid(layer, "", "merge: %s", yttMessage(err))
	}
	return result.(*yamlmeta.DocumentSet).Items[0], nil
}

func matchMissingOK() template.NodeAnnotation {
	return template.NodeAnnotation{Kwargs: []starlark.Tuple{
		{starlark.String(yttoverlay.MatchAnnotationKwargMissingOK), starlark.Bool(true)},
	}}
}

func replaceOrAdd() template.NodeAnnotation {
	return template.NodeAnnotation{Kwargs: []starlark.Tuple{
		{starlark.String(yttoverlay.ReplaceAnnotationKwargOrAdd), starlark.Bool(true)},
	}}
}

func matchByName() template.NodeAnnotation {
	return template.NodeAnnotation{Kwargs: []starlark.Tuple{
		{starlark.String(yttoverlay.MatchAnnotationKwargBy), starlark.NewBuiltin("match_by_name", matchName)},
		{starlark.String(yttoverlay.MatchAnnotationKwargMissingOK), starlark.Bool(true)},
	}}
}

// annotateMerge mirrors ytt's overlay.AnnotateForPlainMerge, adding the
// merge-by-name rule for lists of named maps.
func annotateMerge(node yamlmeta.Node) {
	anns := template.NodeAnnotations{yttoverlay.AnnotationMatch: matchMissingOK()}
	for _, val := range node.GetValues() {
		switch typed := val.(type) {
		case *yamlmeta.Array:
			if !namedItems(typed) {
				anns[yttoverlay.AnnotationReplace] = replaceOrAdd()
				continue
			}
			for _, item := range typed.Items {
				annotateMerge(item.Value.(*yamlmeta.Map))
				item.SetAnnotations(template.NodeAnnotations{yttoverlay.AnnotationMatch: matchByName()})
			}
		case yamlmeta.Node:
			annotateMerge(typed)
		default:
			anns[yttoverlay.AnnotationReplace] = replaceOrAdd()
		}
	}
	node.SetAnnotations(anns)
}

// namedItems reports whether every item of a non-empty list is a map with
// a `name` key.
func namedItems(a *yamlmeta.Array) bool {
	if len(a.Items) == 0 {
		return false
	}
	for _, item := range a.Items {
		m, ok := item.Value.(*yamlmeta.Map)
		if !ok {
			return false
		}
		if _, ok := mapValue(m, "name"); !ok {
			return false
		}
	}
	return true
}

// matchName is an overlay matcher (index, left, right) that matches list
// items by their `name`; an item without a name matches nothing.
func matchName(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	if len(args) != 3 {
		return nil, fmt.Errorf("match_by_name: expected 3 arguments, got %d", len(args))
	}
	name := func(v starlark.Value) (any, bool) {
		goVal, err := core.NewStarlarkValue(v).AsGoValue()
		if err != nil {
			return nil, false
		}
		m, ok := goVal.(*yamlmeta.Map)
		if !ok {
			return nil, false
		}
		return mapValue(m, "name")
	}
	left, ok := name(args[1])
	if !ok {
		return starlark.False, nil
	}
	right, ok := name(args[2])
	if !ok {
		return starlark.False, nil
	}
	equal, _ := yttoverlay.Comparison{}.CompareLeafs(left, right)
	return starlark.Bool(equal), nil
}
