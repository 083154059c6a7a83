// Package render is the renderer's domain: bundle → value layers →
// effective values → resources → access grants, and Overlay application,
// all with the real ytt used as a library. It runs in-process; the service
// runs it inside sandboxed worker processes (internal/sandbox).
package render

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"carvel.dev/ytt/pkg/yamlmeta"
	lru "github.com/hashicorp/golang-lru/v2"
	"google.golang.org/protobuf/proto"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	rendererv1 "github.com/vcfsm/vcfsm/gen/vcfservices/renderer/v1"
)

// Renderer is what the gRPC handler calls: the in-process Engine and the
// sandboxed worker pool both implement it.
type Renderer interface {
	RenderEffectiveValues(context.Context, *rendererv1.RenderEffectiveValuesRequest) (*rendererv1.RenderEffectiveValuesResponse, error)
	RenderResources(context.Context, *rendererv1.RenderResourcesRequest) (*rendererv1.RenderResourcesResponse, error)
	RenderAccessGrants(context.Context, *rendererv1.RenderAccessGrantsRequest) (*rendererv1.RenderAccessGrantsResponse, error)
	ApplyOverlay(context.Context, *rendererv1.ApplyOverlayRequest) (*rendererv1.ApplyOverlayResponse, error)
}

// Engine renders in the calling goroutine, keeping parsed bundles in a
// bounded LRU cache keyed by digest. It is safe for concurrent use. ytt
// cannot be interrupted, so the context is only checked before a render
// starts: bound untrusted templates with the sandbox, not with this.
type Engine struct {
	bundles *lru.Cache[string, *Bundle]
	// values memoizes the value pipeline per bundle digest and layers: it
	// is a pure function of them, and a caller renders the same layers
	// several times in a row (effective values, grants, resources).
	values *lru.Cache[string, *stages]
}

// Bounds of the values memo: entries, and the largest (marshaled) layers
// worth keeping, so that the memo stays well inside a worker's memory.
const (
	valuesMemoEntries  = 16
	valuesMemoMaxInput = 512 << 10
)

// NewEngine returns an engine caching up to cacheSize parsed bundles.
func NewEngine(cacheSize int) (*Engine, error) {
	if cacheSize < 1 {
		return nil, fmt.Errorf("bundle cache size must be at least 1, got %d", cacheSize)
	}
	cache, err := lru.New[string, *Bundle](cacheSize)
	if err != nil {
		return nil, fmt.Errorf("bundle cache: %w", err)
	}
	memo, err := lru.New[string, *stages](valuesMemoEntries)
	if err != nil {
		return nil, fmt.Errorf("values memo: %w", err)
	}
	return &Engine{bundles: cache, values: memo}, nil
}

var _ Renderer = (*Engine)(nil)

// Bundle returns the parsed bundle, from the cache when its digest is there
// (the files, if any, are then not looked at again).
func (e *Engine) Bundle(b *commonv1.Bundle) (*Bundle, error) {
	key, err := BundleKey(b)
	if err != nil {
		return nil, err
	}
	if cached, ok := e.bundles.Get(key); ok {
		return cached, nil
	}
	if len(b.GetFiles()) == 0 {
		return nil, NotCachedError(key)
	}
	parsed, err := parseBundle(key, b.GetFiles())
	if err != nil {
		return nil, err
	}
	e.bundles.Add(key, parsed)
	return parsed, nil
}

// NotCachedError tells the caller to resend a bundle's files.
func NotCachedError(digest string) error {
	return &Error{Kind: ErrBundleNotCached, Layer: LayerBundle, Violations: []Violation{{
		Rule: fmt.Sprintf("bundle %s is not cached by the renderer: resend the request with the bundle's files", digest),
	}}}
}

// RenderEffectiveValues runs the value layers.
func (e *Engine) RenderEffectiveValues(ctx context.Context, req *rendererv1.RenderEffectiveValuesRequest) (*rendererv1.RenderEffectiveValuesResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := e.Bundle(req.GetBundle())
	if err != nil {
		return nil, err
	}
	st, err := e.runValues(b, req.GetValues())
	if err != nil {
		return nil, err
	}
	doc := st.effective
	if req.GetExpanded() {
		doc = st.expanded
	}
	text, err := yamlText(doc)
	if err != nil {
		return nil, err
	}
	resp := &rendererv1.RenderEffectiveValuesResponse{Yaml: text}
	if req.GetProvenance() {
		resp.Provenance = st.provenance(req.GetExpanded())
	}
	return resp, nil
}

// RenderResources renders config/ with the effective values, schema
// defaults included.
func (e *Engine) RenderResources(ctx context.Context, req *rendererv1.RenderResourcesRequest) (*rendererv1.RenderResourcesResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := e.Bundle(req.GetBundle())
	if err != nil {
		return nil, err
	}
	st, docs, err := e.renderConfig(b, req.GetValues())
	if err != nil {
		return nil, err
	}
	res, err := checkResources(docs)
	if err != nil {
		return nil, err
	}
	effective, err := st.expandedText()
	if err != nil {
		return nil, err
	}
	// ytt prints a document stream as its documents joined by "---": the
	// stream is made from the texts already printed for each resource.
	resp := &rendererv1.RenderResourcesResponse{EffectiveValuesYaml: effective}
	var all bytes.Buffer
	for i, r := range res {
		if i > 0 {
			all.WriteString("---\n")
		}
		all.Write(r.proto.GetYaml())
		resp.Resources = append(resp.Resources, r.proto)
	}
	resp.Yaml = all.Bytes()
	return resp, nil
}

// RenderAccessGrants derives the access grants of the rendered resources.
func (e *Engine) RenderAccessGrants(ctx context.Context, req *rendererv1.RenderAccessGrantsRequest) (*rendererv1.RenderAccessGrantsResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b, err := e.Bundle(req.GetBundle())
	if err != nil {
		return nil, err
	}
	_, docs, err := e.renderConfig(b, req.GetValues())
	if err != nil {
		return nil, err
	}
	res, err := checkResources(docs)
	if err != nil {
		return nil, err
	}
	grants, err := deriveGrants(res)
	if err != nil {
		return nil, err
	}
	s, err := grants.Struct()
	if err != nil {
		return nil, fmt.Errorf("access grants: %w", err)
	}
	return &rendererv1.RenderAccessGrantsResponse{AccessGrants: s}, nil
}

// ApplyOverlay applies an Overlay to a runtime spec.
func (e *Engine) ApplyOverlay(ctx context.Context, req *rendererv1.ApplyOverlayRequest) (*rendererv1.ApplyOverlayResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return ApplyOverlay(req)
}

// runValues runs the value layers, or finds their result in the memo. The
// stages are never modified once built, so requests may share them.
func (e *Engine) runValues(b *Bundle, layers *rendererv1.ValueLayers) (*stages, error) {
	input, err := proto.MarshalOptions{Deterministic: true}.Marshal(layers)
	if err != nil || len(input) > valuesMemoMaxInput {
		return runValues(b, layers)
	}
	sum := sha256.Sum256(input)
	key := b.Digest + "\x00" + hex.EncodeToString(sum[:])
	if st, ok := e.values.Get(key); ok {
		return st, nil
	}
	st, err := runValues(b, layers)
	if err != nil {
		return nil, err
	}
	// ytt records which library data values a render used on the values
	// themselves: those cannot be shared between renders.
	if len(st.config.libraryValues) == 0 && len(st.config.librarySchemas) == 0 {
		e.values.Add(key, st)
	}
	return st, nil
}

// renderConfig runs the value layers, then config/'s templates.
func (e *Engine) renderConfig(b *Bundle, layers *rendererv1.ValueLayers) (*stages, []*yamlmeta.Document, error) {
	st, err := e.runValues(b, layers)
	if err != nil {
		return nil, nil, err
	}
	dv := *st.config
	dv.doc = st.withDefaults
	out, err := b.config.eval(&dv)
	if err != nil {
		return nil, nil, err
	}
	return st, outputDocuments(out), nil
}
