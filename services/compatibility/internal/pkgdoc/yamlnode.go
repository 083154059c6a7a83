package pkgdoc

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// The package document is walked as yaml.Nodes rather than decoded into
// structs: a wrongly typed field then becomes one precise issue ("spec.version
// must be a string") instead of a decoder error that stops everything.

// resolve follows aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for depth := 0; n != nil && n.Kind == yaml.AliasNode && depth < 16; depth++ {
		n = n.Alias
	}
	return n
}

// field returns the value of key in a mapping node, or nil.
func field(n *yaml.Node, key string) *yaml.Node {
	n = resolve(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := resolve(n.Content[i]); k != nil && k.Kind == yaml.ScalarNode && k.Value == key {
			return resolve(n.Content[i+1])
		}
	}
	return nil
}

// path walks nested mapping keys.
func path(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		n = field(n, k)
		if n == nil {
			return nil
		}
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

// stringValue reads a field that must be a YAML string. A missing or null
// field is the empty string (as Kubernetes decodes it); any other type is
// reported through ok=false with a description of what was found.
func stringValue(n *yaml.Node) (value string, found string, ok bool) {
	switch {
	case isNull(n):
		return "", "", true
	case n.Kind == yaml.ScalarNode && n.Tag == "!!str":
		return n.Value, "", true
	case n.Kind == yaml.ScalarNode:
		return "", n.Value, false
	default:
		return "", describe(n), false
	}
}

// scalarText is a scalar's text whatever its tag, for head fields such as
// kind and apiVersion.
func scalarText(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode || isNull(n) {
		return ""
	}
	return n.Value
}

// describe names a node's shape for messages.
func describe(n *yaml.Node) string {
	n = resolve(n)
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case isNull(n):
		return "null"
	case n.Kind == yaml.ScalarNode:
		return "the " + strings.TrimPrefix(n.Tag, "!!") + " " + truncate(n.Value)
	}
	return "an unknown YAML node"
}

func truncate(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
