package render

import (
	"fmt"
	"io"
	"sort"
	"sync"

	"carvel.dev/ytt/pkg/cmd/ui"
	"carvel.dev/ytt/pkg/filepos"
	"carvel.dev/ytt/pkg/files"
	"carvel.dev/ytt/pkg/template"
	"carvel.dev/ytt/pkg/workspace"
	"carvel.dev/ytt/pkg/workspace/datavalues"
	"carvel.dev/ytt/pkg/yamlmeta"
	yttoverlay "carvel.dev/ytt/pkg/yttlibrary/overlay"
)

// This file is the only place that drives ytt's workspace API. ytt v0.53.0
// has no formal Go API: the calls below mirror what
// carvel.dev/ytt/pkg/cmd/template.Options.RunWithFiles does for
// `ytt -f <dir>`, split so that the renderer can (a) hand data values over
// as ready-made YAML nodes instead of YAML text, (b) look at the final data
// values before templates are evaluated and (c) skip re-reading templates
// that cannot hold data values. The golden and conformance tests pin the
// behaviour to the ytt CLI of the same module version.

// source is one in-memory file of a ytt library. Its path is relative to the
// library root, as `ytt -f <dir>` names files.
type source struct {
	path string
	data []byte
	// plain marks a YAML file that ytt must not evaluate as a template
	// (`--file-mark <path>:type=yaml-plain`).
	plain bool
}

// library is a set of files that ytt evaluates together. It is immutable
// once built and safe for concurrent use: every run builds its own ytt file
// objects, because ytt marks them while it runs.
type library struct {
	layer   string
	sources []source
	// valuesFiles are the YAML templates holding `#@data/values` or
	// `#@data/values-schema` documents; ytt never outputs them.
	valuesFiles map[string]bool
}

// newLibrary sorts the sources as `ytt -f <dir>` does and finds the data
// values files, parsing each YAML template once.
func newLibrary(layer string, sources []source) (*library, error) {
	sorted := append([]source(nil), sources...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].path < sorted[j].path })
	lib := &library{layer: layer, sources: sorted, valuesFiles: map[string]bool{}}
	for _, f := range lib.buildFiles(nil) {
		if f.Type() != files.TypeYAML || !f.IsTemplate() {
			continue
		}
		data, err := f.Bytes()
		if err != nil {
			return nil, invalid(layer, "", "read %s: %v", f.RelativePath(), err)
		}
		docSet, err := parseYAML(f.RelativePath(), data)
		if err != nil {
			return nil, invalid(layer, "", "%s: %v", f.RelativePath(), err)
		}
		for _, ann := range []template.AnnotationName{datavalues.AnnotationDataValues, datavalues.AnnotationDataValuesSchema} {
			docs, _, err := workspace.DocExtractor{DocSet: docSet}.Extract(ann)
			if err != nil {
				return nil, invalid(layer, "", "%s: %v", f.RelativePath(), err)
			}
			if len(docs) > 0 {
				lib.valuesFiles[f.RelativePath()] = true
			}
		}
	}
	return lib, nil
}

// buildFiles makes fresh ytt file objects for the sources accepted by keep
// (all when keep is nil), in library order.
func (l *library) buildFiles(keep func(source) bool) []*files.File {
	out := make([]*files.File, 0, len(l.sources))
	for _, s := range l.sources {
		if keep != nil && !keep(s) {
			continue
		}
		// NewFileFromSource only fails when a source cannot name its path;
		// a BytesSource always can.
		f := files.MustNewFileFromSource(files.NewBytesSource(s.path, s.data))
		if s.plain {
			f.MarkTemplate(false)
		}
		out = append(out, f)
	}
	return files.NewSortedFiles(out)
}

// dataValues are a library's final data values, as ytt computes them before
// it evaluates the templates.
type dataValues struct {
	// doc is data.values; callers may replace it before eval (to add
	// schema defaults) but never modify it in place.
	doc            *yamlmeta.Document
	libraryValues  []*datavalues.Envelope
	librarySchemas []*datavalues.SchemaEnvelope
}

func (l *library) factory() *workspace.LibraryExecutionFactory {
	quiet := ui.NewCustomWriterTTY(false, io.Discard, io.Discard)
	return workspace.NewLibraryExecutionFactory(quiet, workspace.TemplateLoaderOpts{}, false)
}

// dataValues computes the library's data values with data (nil for none)
// merged over them as `--data-values-file` would.
func (l *library) dataValues(data *yamlmeta.Document) (*dataValues, error) {
	var dv *dataValues
	err := guard(l.layer, func() error {
		var err error
		dv, err = l.computeDataValues(data)
		return err
	})
	return dv, err
}

func (l *library) computeDataValues(data *yamlmeta.Document) (*dataValues, error) {
	if len(l.valuesFiles) == 0 {
		// Without data values files ytt's data values are exactly the
		// given document: hand it over as is, skipping a merge that costs
		// as much as parsing it.
		if data == nil {
			data = datavalues.NewEmptyDataValuesDocument()
		}
		return &dataValues{doc: data}, nil
	}
	// Only the values files (and the libraries they may load) take part in
	// computing the data values; the other templates are parsed once, in
	// eval.
	valuesOnly := l.buildFiles(func(s source) bool { return l.valuesFiles[s.path] || !isYAMLTemplate(s) })
	root := workspace.NewRootLibrary(valuesOnly)
	exec := l.factory().New(workspace.LibraryExecutionContext{Current: root, Root: root})
	schema, schemas, err := exec.Schemas(nil)
	if err != nil {
		return nil, yttFailure(l.layer, err)
	}
	var overlays []*datavalues.Envelope
	if data != nil {
		overlay, err := plainMergeOverlay(data)
		if err != nil {
			return nil, yttFailure(l.layer, err)
		}
		env, err := datavalues.NewEnvelope(overlay)
		if err != nil {
			return nil, yttFailure(l.layer, err)
		}
		overlays = append(overlays, env)
	}
	values, libraryValues, err := exec.Values(overlays, schema)
	if err != nil {
		return nil, yttFailure(l.layer, err)
	}
	return &dataValues{doc: values.Doc, libraryValues: libraryValues, librarySchemas: schemas}, nil
}

// eval evaluates the library's templates with the given data values and
// returns the output documents, overlays applied.
func (l *library) eval(dv *dataValues) (*yamlmeta.DocumentSet, error) {
	var out *yamlmeta.DocumentSet
	err := guard(l.layer, func() error {
		var err error
		out, err = l.evalTemplates(dv)
		return err
	})
	return out, err
}

func (l *library) evalTemplates(dv *dataValues) (*yamlmeta.DocumentSet, error) {
	values, err := datavalues.NewEnvelope(dv.doc)
	if err != nil {
		return nil, yttFailure(l.layer, err)
	}
	all := l.buildFiles(nil)
	for _, f := range all {
		if l.valuesFiles[f.RelativePath()] {
			f.MarkForOutput(false)
		}
	}
	root := workspace.NewRootLibrary(all)
	exec := l.factory().New(workspace.LibraryExecutionContext{Current: root, Root: root})
	result, err := exec.Eval(values, dv.libraryValues, dv.librarySchemas)
	if err != nil {
		return nil, yttFailure(l.layer, err)
	}
	return result.DocSet, nil
}

// run is dataValues then eval.
func (l *library) run(data *yamlmeta.Document) (*yamlmeta.DocumentSet, error) {
	dv, err := l.dataValues(data)
	if err != nil {
		return nil, err
	}
	return l.eval(dv)
}

// isYAMLTemplate reports whether ytt would evaluate the source as a YAML
// template that produces output (not a library, not plain YAML).
func isYAMLTemplate(s source) bool {
	f := files.MustNewFileFromSource(files.NewBytesSource(s.path, s.data))
	if s.plain {
		f.MarkTemplate(false)
	}
	return f.Type() == files.TypeYAML && f.IsTemplate()
}

// plainMergeOverlay turns a plain document into the overlay ytt builds for a
// `--data-values-file`.
func plainMergeOverlay(doc *yamlmeta.Document) (*yamlmeta.Document, error) {
	overlay := doc.DeepCopy()
	if err := yttoverlay.AnnotateForPlainMerge(overlay); err != nil {
		return nil, err
	}
	return overlay, nil
}

// outputDocuments returns the non-empty documents of a render, the ones ytt
// prints. Values that templates computed in Starlark come out as plain Go
// maps and lists; they are turned into YAML nodes like the rest.
func outputDocuments(ds *yamlmeta.DocumentSet) []*yamlmeta.Document {
	var out []*yamlmeta.Document
	for _, d := range ds.Items {
		if d.IsEmpty() {
			continue
		}
		out = append(out, yamlmeta.NewASTFromInterface(d).(*yamlmeta.Document))
	}
	return out
}

// singleDocument returns the one document a values stage must produce; an
// empty output is an empty map.
func singleDocument(layer string, ds *yamlmeta.DocumentSet) (*yamlmeta.Document, error) {
	docs := outputDocuments(ds)
	switch len(docs) {
	case 0:
		return newDocument(&yamlmeta.Map{Position: filepos.NewUnknownPosition()}), nil
	case 1:
		if _, ok := docs[0].Value.(*yamlmeta.Map); !ok {
			return nil, invalid(layer, "", "produced %s; expected a map of values", yamlmeta.TypeName(docs[0].Value))
		}
		return docs[0], nil
	default:
		return nil, invalid(layer, "", "produced %d documents; expected exactly one document of values", len(docs))
	}
}

// yamlText prints documents exactly as the ytt CLI prints them.
func yamlText(docs ...*yamlmeta.Document) ([]byte, error) {
	out, err := (&yamlmeta.DocumentSet{Items: docs}).AsBytes()
	if err != nil {
		return nil, fmt.Errorf("print YAML: %w", err)
	}
	return out, nil
}

// parseYAML parses YAML text with ytt's parser, keeping comments so that
// annotations can be found.
func parseYAML(name string, data []byte) (ds *yamlmeta.DocumentSet, err error) {
	yttMu.Lock()
	defer yttMu.Unlock()
	// ytt's parser panics on some malformed input (the YAML ",0").
	defer func() {
		if r := recover(); r != nil {
			ds, err = nil, fmt.Errorf("%v", r)
		}
	}()
	return yamlmeta.NewDocumentSetFromBytes(data, yamlmeta.DocSetOpts{AssociatedName: name})
}

// yttMu serializes every use of ytt in this process. ytt keeps
// process-wide state without synchronization (template.NewInstructionSet
// counts templates in a plain global), so two renders may not run ytt at
// the same time. A worker process renders one request at a time anyway;
// this only matters for in-process rendering.
var yttMu sync.Mutex

// guard runs a ytt call, holding yttMu, and turns a panic inside ytt into
// an error of the layer whose input caused it.
func guard(layer string, f func() error) (err error) {
	yttMu.Lock()
	defer yttMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			err = invalid(layer, "", "ytt failed on this input: %v", r)
		}
	}()
	return f()
}

func newDocument(value any) *yamlmeta.Document {
	return &yamlmeta.Document{Value: value, Position: filepos.NewUnknownPosition()}
}
