package render

import (
	"sync"

	"carvel.dev/ytt/pkg/filepos"
	"carvel.dev/ytt/pkg/yamlmeta"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

// Provenance layer names (ValueProvenance.layer).
const (
	ProvenanceInventory = "inventory"
	ProvenancePlatform  = "platform"
	ProvenanceVendor    = "vendor"
	ProvenanceUser      = "user"
	ProvenanceDefault   = "default"
)

// systemKey holds the build-time values of config/.vcf/dependencies.yml.
// Templates read them, but they are not part of the service's values: they
// are left out of the effective values, of validation and of provenance.
const systemKey = "__system"

// inventoryKey is where the transpiler also finds the whole inventory
// (packaging-and-build.md), besides its fields at the root of data.values
// (what the example bundle's transpiler reads).
const inventoryKey = "inventory"

// stages are the documents the value pipeline produced, layer by layer.
type stages struct {
	inventory *yamlmeta.Document
	platform  *yamlmeta.Document
	// transpiled is the transpiler's output; nil when the bundle has no
	// transpiler and the (filtered) inventory passes through.
	transpiled *yamlmeta.Document
	vendor     *yamlmeta.Document
	user       *yamlmeta.Document
	// config are config/'s data values (values.yml, dependencies.yml)
	// with the user stage merged over them.
	config *dataValues
	// effective is config's values without __system; expanded adds the
	// schema's defaults.
	effective *yamlmeta.Document
	expanded  *yamlmeta.Document
	// withDefaults is the document the templates see: expanded plus
	// __system.
	withDefaults *yamlmeta.Document

	// expandedYAML is expanded as text, printed once: stages are shared
	// between requests through the values memo.
	printOnce    sync.Once
	expandedYAML []byte
	printErr     error
}

// expandedText returns the expanded effective values as YAML.
func (st *stages) expandedText() ([]byte, error) {
	st.printOnce.Do(func() { st.expandedYAML, st.printErr = yamlText(st.expanded) })
	return st.expandedYAML, st.printErr
}

// runValues runs the five value layers: inventory → platform overlay →
// transpiler → vendor overlay → user overwrite → config/'s data values,
// validated against the package's values schema.
func runValues(b *Bundle, layers *rendererv1.ValueLayers) (*stages, error) {
	st := &stages{}
	st.inventory = inventoryDocument(layers.GetInventory())

	var err error
	if st.platform, err = decodeAndApply(LayerPlatformOverlay, layers.GetPlatformOverlay(), st.inventory); err != nil {
		return nil, err
	}

	vendorInput := st.platform
	if b.transpiler != nil {
		out, err := b.transpiler.run(transpilerInput(st.platform))
		if err != nil {
			return nil, err
		}
		if st.transpiled, err = singleDocument(LayerTranspiler, out); err != nil {
			return nil, err
		}
		stripMeta(st.transpiled)
		vendorInput = st.transpiled
	}
	if st.vendor, err = decodeAndApply(LayerVendorOverlay, layers.GetVendorOverlay(), vendorInput); err != nil {
		return nil, err
	}
	if st.user, err = decodeAndApply(LayerUserOverwrite, layers.GetUserOverwrite(), st.vendor); err != nil {
		return nil, err
	}

	if st.config, err = b.config.dataValues(st.user); err != nil {
		return nil, err
	}
	st.effective = withoutKey(st.config.doc, systemKey)

	values, ok := plainValue(st.effective).(map[string]any)
	if !ok {
		return nil, invalid(LayerConfig, "", "data values are a %s; expected a map", yamlmeta.TypeName(st.effective.Value))
	}
	st.withDefaults = st.config.doc
	st.expanded = st.effective
	if b.schema != nil {
		if violations := b.schema.check(values); len(violations) > 0 {
			return nil, &Error{Kind: ErrInvalidInput, Layer: LayerValuesSchema, Violations: violations}
		}
		st.withDefaults = st.config.doc.DeepCopy()
		mergeDefaults(st.withDefaults.Value, values)
		st.expanded = withoutKey(st.withDefaults, systemKey)
	}
	return st, nil
}

func decodeAndApply(layer, encoded string, doc *yamlmeta.Document) (*yamlmeta.Document, error) {
	text, err := decodeLayer(layer, encoded)
	if err != nil {
		return nil, err
	}
	out, err := applyLayer(layer, text, doc)
	if err != nil {
		return nil, err
	}
	if out != doc {
		stripMeta(out)
	}
	return out, nil
}

// Transpile runs the bundle's transpiler over an inventory the way the value
// pipeline does (structured hand-over, no YAML text in between) and prints
// its output. It is the pipeline's third stage on its own, for diagnostics
// and benchmarks; a bundle without transpiler returns the inventory.
func (b *Bundle) Transpile(inv *commonv1.Inventory) ([]byte, error) {
	doc := inventoryDocument(inv)
	if b.transpiler != nil {
		out, err := b.transpiler.run(transpilerInput(doc))
		if err != nil {
			return nil, err
		}
		if doc, err = singleDocument(LayerTranspiler, out); err != nil {
			return nil, err
		}
	}
	return yamlText(doc)
}

// inventoryDocument is the inventory as api.md's JSON shows it (protojson
// names, unset fields left out), except that `regions` is always there, an
// empty list when there are none: it is the one field every inventory has,
// and transpilers iterate it without checking.
func inventoryDocument(inv *commonv1.Inventory) *yamlmeta.Document {
	if inv == nil {
		inv = &commonv1.Inventory{}
	}
	m := protoNode(inv.ProtoReflect())
	if _, ok := mapValue(m, "regions"); !ok {
		m.Items = append([]*yamlmeta.MapItem{mapItem("regions", &yamlmeta.Array{Position: filepos.NewUnknownPosition()})}, m.Items...)
	}
	return newDocument(m)
}

// transpilerInput is the transpiler's data.values: the inventory's fields
// at the root and the whole inventory under `inventory`. The two share
// nodes; ytt only reads them.
func transpilerInput(inventory *yamlmeta.Document) *yamlmeta.Document {
	m, ok := inventory.Value.(*yamlmeta.Map)
	if !ok {
		return inventory
	}
	out := &yamlmeta.Map{Position: filepos.NewUnknownPosition()}
	for _, item := range m.Items {
		if keyString(item.Key) == inventoryKey {
			continue
		}
		out.Items = append(out.Items, item)
	}
	out.Items = append(out.Items, mapItem(inventoryKey, m))
	return newDocument(out)
}

// provenance names, for every leaf of the effective values, the layer that
// last changed it. A layer that restates a value unchanged does not take
// it over; list items are followed by position.
func (st *stages) provenance(expanded bool) []*rendererv1.ValueProvenance {
	owners := track(nil, st.inventory, ProvenanceInventory)
	owners = track(owners, st.platform, ProvenancePlatform)
	if st.transpiled != nil {
		owners = track(nil, st.transpiled, ProvenanceVendor)
	}
	owners = track(owners, st.vendor, ProvenanceVendor)
	owners = track(owners, st.user, ProvenanceUser)
	final := st.effective
	if expanded {
		final = st.expanded
	}
	owners = track(owners, final, ProvenanceDefault)

	var out []*rendererv1.ValueProvenance
	for _, l := range leaves(final) {
		out = append(out, &rendererv1.ValueProvenance{Path: l.path, Layer: owners[l.path].layer, Value: l.value})
	}
	return out
}

type owner struct {
	value string
	layer string
}

// track labels the leaves of doc: a leaf whose path and value were already
// in prev keeps its owner, any other leaf belongs to layer.
func track(prev map[string]owner, doc *yamlmeta.Document, layer string) map[string]owner {
	next := map[string]owner{}
	for _, l := range leaves(doc) {
		if p, ok := prev[l.path]; ok && p.value == l.value {
			next[l.path] = p
			continue
		}
		next[l.path] = owner{value: l.value, layer: layer}
	}
	return next
}
