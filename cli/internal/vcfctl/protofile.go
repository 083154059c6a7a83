package vcfctl

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// protoFile is a YAML or JSON file read into a generated message, field by
// field, so a mistake is reported with its line and field path
// ("rollout.yaml: line 4, waves[1].maxConcurrent: …") instead of the
// decoder's offset. lines maps each field path to its line, to place the
// server's own messages ("rollout.waves[1].onFailure …") in the file.
type protoFile struct {
	path  string
	lines map[string]int
	// check validates a scalar field's text by its JSON name (durations,
	// enumerations); nil accepts any.
	check map[string]func(string) error
}

// readProtoFile fills m from the file at path.
func readProtoFile(path string, m proto.Message, check map[string]func(string) error) (*protoFile, error) {
	b, err := os.ReadFile(path) //nolint:gosec // the user names the file
	if err != nil {
		return nil, err
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s is neither YAML nor JSON: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s is empty", path)
	}
	f := &protoFile{path: path, lines: map[string]int{}, check: check}
	return f, f.message(doc.Content[0], "", m.ProtoReflect())
}

// fail is an error at node n, field path at.
func (f *protoFile) fail(n *yamlv3.Node, at, format string, args ...any) error {
	where := fmt.Sprintf("%s: line %d", f.path, n.Line)
	if at != "" {
		where += ", " + at
	}
	return fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...))
}

func (f *protoFile) message(n *yamlv3.Node, at string, m protoreflect.Message) error {
	if n.Kind != yamlv3.MappingNode {
		return f.fail(n, at, "want a mapping of fields, got %s", kindText(n))
	}
	fields := m.Descriptor().Fields()
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		fd := fields.ByJSONName(key.Value)
		if fd == nil {
			fd = fields.ByName(protoreflect.Name(key.Value))
		}
		if fd == nil {
			return f.fail(key, at, "unknown field %q (known: %s)", key.Value, fieldNames(fields))
		}
		path := fd.JSONName()
		if at != "" {
			path = at + "." + path
		}
		f.lines[path] = key.Line
		if err := f.field(val, path, m, fd); err != nil {
			return err
		}
	}
	return nil
}

func (f *protoFile) field(n *yamlv3.Node, at string, m protoreflect.Message, fd protoreflect.FieldDescriptor) error {
	switch {
	case n.Tag == "!!null":
		return nil
	case fd.IsMap():
		if n.Kind != yamlv3.MappingNode {
			return f.fail(n, at, "want a mapping, got %s", kindText(n))
		}
		mp := m.Mutable(fd).Map()
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			val, err := f.scalar(v, at+"."+k.Value, fd.MapValue())
			if err != nil {
				return err
			}
			mp.Set(protoreflect.ValueOfString(k.Value).MapKey(), val)
		}
		return nil
	case fd.IsList():
		if n.Kind != yamlv3.SequenceNode {
			return f.fail(n, at, "want a list, got %s", kindText(n))
		}
		list := m.Mutable(fd).List()
		for i, item := range n.Content {
			path := fmt.Sprintf("%s[%d]", at, i)
			f.lines[path] = item.Line
			if fd.Kind() == protoreflect.MessageKind {
				el := list.NewElement()
				if err := f.message(item, path, el.Message()); err != nil {
					return err
				}
				list.Append(el)
				continue
			}
			v, err := f.scalar(item, path, fd)
			if err != nil {
				return err
			}
			list.Append(v)
		}
		return nil
	case fd.Kind() == protoreflect.MessageKind:
		return f.message(n, at, m.Mutable(fd).Message())
	}
	v, err := f.scalar(n, at, fd)
	if err != nil {
		return err
	}
	m.Set(fd, v)
	return nil
}

// scalar reads a string, bool or integer field.
func (f *protoFile) scalar(n *yamlv3.Node, at string, fd protoreflect.FieldDescriptor) (protoreflect.Value, error) {
	if n.Kind != yamlv3.ScalarNode {
		return protoreflect.Value{}, f.fail(n, at, "want a single value, got %s", kindText(n))
	}
	switch fd.Kind() {
	case protoreflect.StringKind:
		if check := f.check[string(fd.JSONName())]; check != nil {
			if err := check(n.Value); err != nil {
				return protoreflect.Value{}, f.fail(n, at, "%s", err)
			}
		}
		return protoreflect.ValueOfString(n.Value), nil
	case protoreflect.BoolKind:
		b, err := strconv.ParseBool(n.Value)
		if err != nil || n.Tag != "!!bool" {
			return protoreflect.Value{}, f.fail(n, at, "%q is not true or false", n.Value)
		}
		return protoreflect.ValueOfBool(b), nil
	case protoreflect.Int32Kind:
		i, err := strconv.ParseInt(n.Value, 10, 32)
		if err != nil {
			return protoreflect.Value{}, f.fail(n, at, "%q is not a whole number", n.Value)
		}
		return protoreflect.ValueOfInt32(int32(i)), nil
	}
	return protoreflect.Value{}, f.fail(n, at, "vcfctl cannot read a %s field from a file", fd.Kind())
}

// serverPath finds a field path in a server message ("rollout.waves[1]…").
var serverPath = regexp.MustCompile(`[a-zA-Z]+(\[\d+\])?(\.[a-zA-Z]+(\[\d+\])?)*`)

// place adds the file and line to a server's error about the file's
// content, when the message names a field path the file has.
func (f *protoFile) place(err error, prefix string) error {
	if err == nil || f == nil {
		return err
	}
	best, line := "", 0
	for _, p := range serverPath.FindAllString(err.Error(), -1) {
		if !strings.ContainsAny(p, ".[") {
			continue // a word, not a field path
		}
		p = strings.TrimPrefix(p, prefix)
		for p != "" {
			if l, ok := f.lines[p]; ok && len(p) > len(best) {
				best, line = p, l
				break
			}
			i := max(strings.LastIndexAny(p, ".["), 0)
			p = p[:i]
		}
	}
	if line == 0 {
		return err
	}
	return &placedError{err: err, where: fmt.Sprintf("%s line %d (%s)", f.path, line, best)}
}

// placedError is a server's error with where in the user's file it points.
type placedError struct {
	err   error
	where string
}

func (e *placedError) Error() string { return e.err.Error() + " [" + e.where + "]" }
func (e *placedError) Unwrap() error { return e.err }

func kindText(n *yamlv3.Node) string {
	switch n.Kind {
	case yamlv3.MappingNode:
		return "a mapping"
	case yamlv3.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

func fieldNames(fields protoreflect.FieldDescriptors) string {
	var names []string
	for i := range fields.Len() {
		names = append(names, fields.Get(i).JSONName())
	}
	return strings.Join(names, ", ")
}
