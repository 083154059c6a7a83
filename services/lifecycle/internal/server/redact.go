package server

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Viewers read everything the Service Manager holds about a service except
// its secrets: every value that ends up in a rendered Secret, and every
// value at a key the values schema marks sensitive (format: password,
// writeOnly: true or x-sensitive: true), shows as "<redacted>" to them,
// wherever it appears: the service's value layers, the render previews
// (effective values, provenance, resources), upgrade plans, history,
// state and the watch stream. Administrators and operators see them. The
// rule lives here, at the edge, which knows the caller's role; the domain
// only says what is secret (by rendering).

// redacted replaces every hidden value.
const redacted = "<redacted>"

// minNeedle is the shortest secret looked for inside free text (error
// messages, step messages): shorter ones ("true", a port) would hide
// ordinary words. Values in structured places are hidden whatever their
// length.
const minNeedle = 6

// secrets is what a viewer must not see of one service.
type secrets struct {
	// all hides every value: what is secret could not be worked out (the
	// render failed), so nothing is shown.
	all bool
	// values are the strings the service's Secrets hold (and the string
	// leaves of YAML or JSON held in them).
	values map[string]struct{}
	// sensitive are the value paths the schema marks sensitive; "*"
	// matches any key or index.
	sensitive [][]string
	// needles are the values looked for in free text: each secret of
	// minNeedle bytes or more and its base64 form, longest first.
	needles []string
}

func newSecrets(values map[string]struct{}, sensitive [][]string) *secrets {
	s := &secrets{values: values, sensitive: sensitive}
	for v := range values {
		if len(v) >= minNeedle {
			s.needles = append(s.needles, v, base64.StdEncoding.EncodeToString([]byte(v)))
		}
	}
	sort.Slice(s.needles, func(i, j int) bool { return len(s.needles[i]) > len(s.needles[j]) })
	return s
}

// hideAll is the answer when the secrets cannot be worked out.
var hideAll = &secrets{all: true}

// secretStrings collects the values the Secret documents of a rendered
// YAML stream hold: data (base64-decoded) and stringData, and the string
// leaves of any value that is itself YAML or JSON (a values file in a
// Secret).
func secretStrings(stream []byte) (map[string]struct{}, error) {
	out := map[string]struct{}{}
	err := eachDoc(stream, func(doc map[string]any) {
		if doc["kind"] != "Secret" {
			return
		}
		for _, field := range []string{"data", "stringData"} {
			m, _ := doc[field].(map[string]any)
			for _, v := range m {
				s := fmt.Sprint(v)
				if field == "data" {
					if raw, err := base64.StdEncoding.DecodeString(s); err == nil {
						s = string(raw)
					}
				}
				addSecret(out, s)
			}
		}
	})
	return out, err
}

func addSecret(out map[string]struct{}, s string) {
	if s == "" {
		return
	}
	out[s] = struct{}{}
	var nested any
	if strings.ContainsAny(s, ":\n{[") && yaml.Unmarshal([]byte(s), &nested) == nil {
		leafStrings(nested, out)
	}
}

func leafStrings(v any, out map[string]struct{}) {
	switch t := v.(type) {
	case map[string]any:
		for _, c := range t {
			leafStrings(c, out)
		}
	case []any:
		for _, c := range t {
			leafStrings(c, out)
		}
	case string:
		if t != "" {
			out[t] = struct{}{}
		}
	case nil:
	default:
		out[fmt.Sprint(t)] = struct{}{}
	}
}

// eachDoc calls fn with every map document of a YAML stream.
func eachDoc(stream []byte, fn func(map[string]any)) error {
	r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(stream)))
	for {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read rendered documents: %w", err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			return fmt.Errorf("read rendered document: %w", err)
		}
		if doc != nil {
			fn(doc)
		}
	}
}

// sensitivePaths lists the value paths an OpenAPI v3 values schema marks
// sensitive.
func sensitivePaths(schema map[string]any) [][]string {
	var out [][]string
	var walk func(node map[string]any, path []string, depth int)
	walk = func(node map[string]any, path []string, depth int) {
		if node == nil || depth > 64 {
			return
		}
		if node["format"] == "password" || node["writeOnly"] == true || node["x-sensitive"] == true {
			out = append(out, append([]string(nil), path...))
			return
		}
		props, _ := node["properties"].(map[string]any)
		for name, p := range props {
			child, _ := p.(map[string]any)
			walk(child, append(path, name), depth+1)
		}
		if items, ok := node["items"].(map[string]any); ok {
			walk(items, append(path, "*"), depth+1)
		}
		if extra, ok := node["additionalProperties"].(map[string]any); ok {
			walk(extra, append(path, "*"), depth+1)
		}
	}
	walk(schema, nil, 0)
	return out
}

// sensitiveAt reports a path at or under a sensitive one.
func (s *secrets) sensitiveAt(path []string) bool {
	for _, p := range s.sensitive {
		if len(p) > len(path) {
			continue
		}
		match := true
		for i, seg := range p {
			if seg != "*" && seg != path[i] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// secretValue reports a leaf value a viewer must not see.
func (s *secrets) secretValue(v any) bool {
	if s.all {
		return true
	}
	switch t := v.(type) {
	case nil:
		return false
	case string:
		_, ok := s.values[t]
		return ok
	case map[string]any, []any:
		return false
	default:
		_, ok := s.values[fmt.Sprint(t)]
		return ok
	}
}

// tree returns v with every secret leaf, and everything under a sensitive
// path, replaced.
func (s *secrets) tree(v any, path []string) any {
	if s.sensitiveAt(path) {
		return redacted
	}
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			t[k] = s.tree(c, append(path, k))
		}
		return t
	case []any:
		for i, c := range t {
			t[i] = s.tree(c, append(path, strconv.Itoa(i)))
		}
		return t
	}
	if s.secretValue(v) {
		return redacted
	}
	return v
}

// valuesYAML hides the secrets of a values document; one that cannot be
// read is hidden whole.
func (s *secrets) valuesYAML(doc []byte) []byte {
	if len(bytes.TrimSpace(doc)) == 0 {
		return doc
	}
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return []byte(redacted + "\n")
	}
	out, err := yaml.Marshal(s.tree(v, nil))
	if err != nil {
		return []byte(redacted + "\n")
	}
	return out
}

// valuesBase64 is valuesYAML for a base64-encoded layer (api.md's values).
func (s *secrets) valuesBase64(layer string) string {
	if layer == "" {
		return layer
	}
	raw, err := base64.StdEncoding.DecodeString(layer)
	if err != nil {
		return redacted
	}
	return base64.StdEncoding.EncodeToString(s.valuesYAML(raw))
}

// resources hides, in a stream of rendered documents, every Secret's data
// and every secret value elsewhere (the service's, and those the stream's
// own Secrets hold); a stream that cannot be read is hidden whole. The
// schema's paths are value paths, not document paths: here only values
// count.
func (s *secrets) resources(stream []byte) []byte {
	if len(bytes.TrimSpace(stream)) == 0 {
		return stream
	}
	own, err := secretStrings(stream)
	if err != nil {
		return []byte(redacted + "\n")
	}
	for v := range s.values {
		own[v] = struct{}{}
	}
	eq := &secrets{values: own}
	var b bytes.Buffer
	err = eachDoc(stream, func(doc map[string]any) {
		if doc["kind"] == "Secret" {
			for _, field := range []string{"data", "stringData"} {
				if m, ok := doc[field].(map[string]any); ok {
					for k := range m {
						m[k] = redacted
					}
				}
			}
		}
		for k, v := range doc {
			if k != "apiVersion" && k != "kind" {
				doc[k] = eq.tree(v, nil)
			}
		}
		out, err := yaml.Marshal(doc)
		if err != nil {
			out = []byte(redacted + "\n")
		}
		b.WriteString("---\n")
		b.Write(out)
	})
	if err != nil {
		return []byte(redacted + "\n")
	}
	return b.Bytes()
}

// text hides the secrets that appear inside free text.
func (s *secrets) text(t string) string {
	for _, n := range s.needles {
		if strings.Contains(t, n) {
			t = strings.ReplaceAll(t, n, redacted)
		}
	}
	return t
}

// provenance hides one provenance entry's value (a JSON scalar) when it is
// secret or its path sensitive.
func (s *secrets) provenance(path, value string) string {
	if s.all || s.sensitiveAt(splitPath(path)) {
		return strconv.Quote(redacted)
	}
	var v any
	if json.Unmarshal([]byte(value), &v) == nil && s.secretValue(v) {
		return strconv.Quote(redacted)
	}
	return value
}

// splitPath splits a provenance path (regions[0].name, a["x.y"].b) into
// its keys and indices.
func splitPath(p string) []string {
	var out []string
	for p != "" {
		switch {
		case p[0] == '.':
			p = p[1:]
		case strings.HasPrefix(p, `["`):
			end := strings.Index(p, `"]`)
			if end < 0 {
				return append(out, p)
			}
			key, err := strconv.Unquote(p[1 : end+1])
			if err != nil {
				key = p[2:end]
			}
			out, p = append(out, key), p[end+2:]
		case p[0] == '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return append(out, p)
			}
			out, p = append(out, p[1:end]), p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			out, p = append(out, p[:end]), p[end:]
		}
	}
	return out
}
