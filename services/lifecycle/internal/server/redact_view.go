package server

import (
	"context"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// This file applies redact.go's rule to the answers: who may see secrets,
// what a service's secrets are, and every answer that can hold one.

// canSeeSecrets reports a caller who may see secret values: one who may
// change services (administrators, operators). A call without an identity
// comes from a server with authentication off (tests) and sees everything.
func canSeeSecrets(ctx context.Context) bool {
	id, ok := auth.CallerIdentity(ctx)
	return !ok || id.Role.Has(auth.PermWrite)
}

// secretsCache keeps each service's secrets as its stored values give them,
// per store revision: a viewer reading a service over and over costs one
// render per change. Bounded, emptied when full.
type secretsCache struct {
	mu sync.Mutex
	m  map[secretsKey]*secrets
}

type secretsKey struct {
	id       string
	revision int64
}

const secretsCacheEntries = 4096

func (c *secretsCache) get(k secretsKey) (*secrets, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[k]
	return s, ok
}

func (c *secretsCache) put(k secretsKey, s *secrets) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= secretsCacheEntries {
		c.m = map[secretsKey]*secrets{}
	}
	c.m[k] = s
}

// secretsOf works out a service's secrets by rendering it: with its stored
// values (in is empty; cached per revision), or with a preview's own
// input. When the render fails, everything is hidden.
func (h *Handler) secretsOf(ctx context.Context, id string, in lifecycle.RenderInput) *secrets {
	svc, err := h.m.View(ctx, id)
	if err != nil {
		return hideAll
	}
	stored := in == (lifecycle.RenderInput{})
	key := secretsKey{id: svc.ID, revision: svc.Revision}
	if stored {
		if s, ok := h.secrets.get(key); ok {
			return s
		}
	}
	var sensitive [][]string
	if b, err := h.m.Bundle(svc); err == nil && b != nil {
		sensitive = sensitivePaths(b.Package.ValuesSchema)
	}
	stream, err := h.m.RenderResources(ctx, svc.ID, in)
	if err != nil {
		return hideAll
	}
	values, err := secretStrings(stream)
	if err != nil {
		return hideAll
	}
	s := newSecrets(values, sensitive)
	if stored && svc.Revision > 0 {
		h.secrets.put(key, s)
	}
	return s
}

// hideView hides a service view's secrets in place (a fresh view, not yet
// shared).
func (s *secrets) hideView(v *lifecyclev1.VcfService) {
	s.message(v.ProtoReflect())
}

// message hides the secrets of a message in place: value layers and
// planned resources by their structure, provenance by path and value,
// every other string as text.
func (s *secrets) message(m protoreflect.Message) {
	switch t := m.Interface().(type) {
	case *lifecyclev1.OverlayValues:
		t.PlatformOverlay, t.VendorOverlay = s.valuesBase64(t.GetPlatformOverlay()), s.valuesBase64(t.GetVendorOverlay())
		t.UserOverwrite, t.Effective = s.valuesBase64(t.GetUserOverwrite()), s.valuesBase64(t.GetEffective())
		return
	case *lifecyclev1.ResourcePlanEntry:
		t.CurrentYaml, t.PlannedYaml = string(s.resources([]byte(t.GetCurrentYaml()))), string(s.resources([]byte(t.GetPlannedYaml())))
		return
	case *lifecyclev1.ValueProvenance:
		t.Value = s.provenance(t.GetPath(), t.GetValue())
		return
	case *structpb.Value:
		if str, ok := t.GetKind().(*structpb.Value_StringValue); ok {
			str.StringValue = s.text(str.StringValue)
			return
		}
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		s.field(m, fd, v)
		return true
	})
}

func (s *secrets) field(m protoreflect.Message, fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	switch {
	case fd.IsList():
		l := v.List()
		for i := range l.Len() {
			if fd.Kind() == protoreflect.StringKind {
				l.Set(i, protoreflect.ValueOfString(s.text(l.Get(i).String())))
			} else if fd.Message() != nil {
				s.message(l.Get(i).Message())
			}
		}
	case fd.IsMap():
		mv := v.Map()
		mv.Range(func(k protoreflect.MapKey, e protoreflect.Value) bool {
			if fd.MapValue().Kind() == protoreflect.StringKind {
				mv.Set(k, protoreflect.ValueOfString(s.text(e.String())))
			} else if fd.MapValue().Message() != nil {
				s.message(e.Message())
			}
			return true
		})
	case fd.Message() != nil:
		s.message(v.Message())
	case fd.Kind() == protoreflect.StringKind:
		m.Set(fd, protoreflect.ValueOfString(s.text(v.String())))
	}
}

// idOf is a request's service id.
func idOf(req any) string {
	if r, ok := req.(hasID); ok {
		return r.GetId()
	}
	return ""
}

// hideAnswer hides the secrets of an answer a viewer gets. Answers are
// built fresh for each call (GetService's, which may be shared, are
// hidden by the view cache itself), so they are changed in place.
func (h *Handler) hideAnswer(ctx context.Context, req, resp any) any {
	switch r := resp.(type) {
	case *lifecyclev1.ListServicesResponse:
		for _, v := range r.GetValues() {
			h.secretsOf(ctx, v.GetId(), lifecycle.RenderInput{}).hideView(v)
		}
	case *lifecyclev1.RenderEffectiveValuesResponse:
		in := renderInput(req.(*lifecyclev1.RenderEffectiveValuesRequest).GetValues())
		if d := r.GetEffectiveValues(); d != nil {
			d.Data = h.secretsOf(ctx, idOf(req), in).valuesYAML(d.GetData())
		}
	case *lifecyclev1.RenderValueProvenanceResponse:
		in := renderInput(req.(*lifecyclev1.RenderValueProvenanceRequest).GetValues())
		h.secretsOf(ctx, idOf(req), in).message(r.ProtoReflect())
	case *lifecyclev1.RenderResourcesResponse:
		// The answer's own Secrets are hidden by resources; the stored
		// values' secrets too, wherever else they appear.
		if d := r.GetResources(); d != nil {
			d.Data = h.secretsOf(ctx, idOf(req), lifecycle.RenderInput{}).resources(d.GetData())
		}
	case *lifecyclev1.PreviewUpgradeResponse, *lifecyclev1.ListServiceHistoryResponse, *lifecyclev1.GetServiceStateResponse,
		*lifecyclev1.GetRolloutResponse:
		h.secretsOf(ctx, idOf(req), lifecycle.RenderInput{}).message(resp.(interface {
			ProtoReflect() protoreflect.Message
		}).ProtoReflect())
	}
	return resp
}
