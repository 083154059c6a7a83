package steps

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// Well-known labels (element-types overview).
const (
	LabelName         = "services.vcfa.broadcom.com/name"
	LabelOverlay      = "services.vcfa.broadcom.com/overlay"
	LabelOverlayApply = "services.vcfa.broadcom.com/overlay-apply"
)

// overlayIndex resolves a service's Overlay resources (runtime-spec.md):
// each Overlay's data values are literals or selectors over the service's
// other resources; an Overlay is ready when every value resolved.
type overlayIndex struct {
	byLabel map[string]*resolvedOverlay
}

type resolvedOverlay struct {
	template string
	values   map[string]any
	missing  []string
}

// indexOverlays resolves the Overlays among a service's records.
func indexOverlays(ctx context.Context, repo lifecycle.Repository, serviceID string) *overlayIndex {
	idx := &overlayIndex{byLabel: map[string]*resolvedOverlay{}}
	res, err := repo.Resources(ctx, serviceID)
	if err != nil {
		return idx
	}
	for _, r := range res {
		if r.Kind != "Overlay" {
			continue
		}
		label := LabelOf(r.Doc, LabelOverlay)
		if label == "" {
			continue
		}
		spec, _ := r.Doc["spec"].(map[string]any)
		tmpl, _ := spec["overlay"].(string)
		ro := &resolvedOverlay{template: tmpl, values: map[string]any{}}
		data, _ := spec["data"].(map[string]any)
		names := make([]string, 0, len(data))
		for k := range data {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, name := range names {
			item, _ := data[name].(map[string]any)
			if v, ok := item["value"]; ok {
				ro.values[name] = fmt.Sprint(v)
				continue
			}
			sel, _ := item["selector"].(map[string]any)
			if v, ok := ResolveSelector(sel, res); ok {
				ro.values[name] = v
			} else {
				ro.missing = append(ro.missing, name)
			}
		}
		idx.byLabel[label] = ro
	}
	return idx
}

func LabelOf(doc map[string]any, key string) string {
	meta, _ := doc["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	v, _ := labels[key].(string)
	return v
}

// ResolveSelector finds the first resource of the selector's kind whose
// labels include the selector's labels and extracts path from it.
func ResolveSelector(sel map[string]any, res []*lifecycle.Resource) (string, bool) {
	kind, _ := sel["kind"].(string)
	want, _ := sel["labels"].(map[string]any)
	path, _ := sel["path"].(string)
	for _, r := range res {
		if r.Kind != kind || !labelsMatch(r.Doc, want) {
			continue
		}
		if v, ok := extract(r, path); ok && v != "" {
			return v, true
		}
	}
	return "", false
}

func labelsMatch(doc map[string]any, want map[string]any) bool {
	for k, v := range want {
		if LabelOf(doc, k) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

// SplitPath splits a dotted path; "\." escapes a dot inside a key.
func SplitPath(p string) []string {
	var parts []string
	var cur strings.Builder
	for i := 0; i < len(p); i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p) && p[i+1] == '.':
			cur.WriteByte('.')
			i++
		case p[i] == '.':
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(p[i])
		}
	}
	return append(parts, cur.String())
}

func extract(r *lifecycle.Resource, path string) (string, bool) {
	parts := SplitPath(path)
	if len(parts) == 3 && parts[0] == "status" && parts[1] == "readyConditions" {
		v, ok := r.ReadyConditions[parts[2]]
		return v, ok
	}
	if r.Kind == "Secret" && len(parts) >= 2 && parts[0] == "data" {
		if data, ok := r.Doc["data"].(map[string]any); ok {
			if s, ok := data[parts[1]].(string); ok {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					return string(b), true
				}
			}
		}
		if data, ok := r.Doc["stringData"].(map[string]any); ok {
			if s, ok := data[parts[1]].(string); ok {
				return s, true
			}
		}
		return "", false
	}
	var cur any = r.Doc
	for _, p := range parts {
		mm, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		cur = mm[p]
	}
	if cur == nil {
		return "", false
	}
	return fmt.Sprint(cur), true
}

// status of an Overlay resource itself.
func (idx *overlayIndex) status(r *lifecycle.Resource) (string, string) {
	ro := idx.byLabel[LabelOf(r.Doc, LabelOverlay)]
	if ro == nil {
		return target.StatusUnhealthy, "Overlay has no services.vcfa.broadcom.com/overlay label"
	}
	if len(ro.missing) > 0 {
		return target.StatusBusy, fmt.Sprintf("Waiting for values: [%s]", strings.Join(ro.missing, ", "))
	}
	return target.StatusHealthy, "All values resolved"
}

// withOverlay returns the document to apply for r: its own, or its runtime
// spec transformed by the Overlay it references. ok=false means r must
// wait (eager mode) with the given status and message.
func withOverlay(ctx context.Context, renderer lifecycle.Renderer, r *lifecycle.Resource, idx *overlayIndex) (doc map[string]any, status, msg string, ok bool) {
	label := LabelOf(r.Doc, LabelOverlay)
	if label == "" {
		return r.Doc, "", "", true
	}
	mode := LabelOf(r.Doc, LabelOverlayApply)
	if mode == "" {
		mode = "eager"
	}
	ro := idx.byLabel[label]
	ready := ro != nil && len(ro.missing) == 0
	if !ready && ro != nil && ro.template == "" {
		ready = false
	}
	spec, _ := r.Doc["spec"].(map[string]any)
	specYAML, err := yaml.Marshal(spec)
	if err != nil {
		return nil, target.StatusUnhealthy, fmt.Sprintf("Failed to apply overlay: %v", err), false
	}
	req := lifecycle.OverlayRequest{RuntimeSpecYAML: specYAML, Mode: mode, OverlayReady: ready, OverlayName: label}
	if ro != nil {
		req.Overlay, req.Values = ro.template, ro.values
	}
	resp, err := renderer.ApplyOverlay(ctx, req)
	if err != nil {
		return nil, target.StatusBusy, fmt.Sprintf("Waiting for the renderer to apply overlay %q: %v", label, err), false
	}
	switch resp.Status {
	case target.StatusBusy, target.StatusUnhealthy:
		return nil, resp.Status, resp.Message, false
	}
	out := map[string]any{}
	for k, v := range r.Doc {
		out[k] = v
	}
	if resp.Applied {
		var newSpec map[string]any
		if err := yaml.Unmarshal(resp.RuntimeSpecYAML, &newSpec); err != nil {
			return nil, target.StatusUnhealthy, fmt.Sprintf("Failed to apply overlay: the transformed spec is not YAML: %v", err), false
		}
		out["spec"] = newSpec
	}
	return out, target.StatusHealthy, resp.Message, true
}
