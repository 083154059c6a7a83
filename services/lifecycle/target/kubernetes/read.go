package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// AnnotationDrift is added to the document Get reports when the objects
// on the cluster no longer match it, so the controllers re-apply it.
const AnnotationDrift = "vcfsm.dev/drift"

// reader is Get, List and Secrets: it turns what is on a cluster into the
// Objects the domain sees, with their health and drift.
type reader struct {
	conns    *connections
	deployed *deployedState
}

// get reads one resource.
func (rd *reader) get(ctx context.Context, k target.Key) (target.Object, error) {
	r, err := rd.conns.locate(ctx, k, "")
	if err != nil {
		return target.Object{}, fmt.Errorf("get %s: %w", k, err)
	}
	if r.anchor == nil {
		return target.Object{}, fmt.Errorf("%s: %w", k, target.ErrNotFound)
	}
	obj, err := rd.read(ctx, r.c, k, applied{anchor: r.anchor})
	if err != nil {
		return target.Object{}, fmt.Errorf("get %s: %w", k, err)
	}
	return obj, nil
}

// read turns a resource's anchor into the Object the domain sees: the
// desired document (marked when the cluster drifted from it), owner,
// finalizers and health.
func (rd *reader) read(ctx context.Context, c *cluster, k target.Key, a applied) (target.Object, error) {
	u := a.anchor
	ann := u.GetAnnotations()
	gen, _ := strconv.ParseInt(ann[AnnotationGeneration], 10, 64)
	obj := target.Object{Key: k, Namespace: u.GetNamespace(), Owner: ownerOf(u), Finalizers: ownFinalizers(u),
		Adopted: ann[AnnotationAdopted] == "true", ExternalID: string(u.GetUID()), Generation: max(gen, 1),
		UpdatedAt: u.GetCreationTimestamp().UTC(), Status: target.StatusHealthy}
	if raw := ann[AnnotationDesired]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &obj.Spec); err != nil {
			return target.Object{}, fmt.Errorf("%s/%s: annotation %s: %w", u.GetNamespace(), u.GetName(), AnnotationDesired, err)
		}
		drift, err := driftOf(ctx, c, k, u, obj.Spec)
		if err != nil {
			return target.Object{}, err
		}
		if u.GetDeletionTimestamp() != nil && !obj.Owner.IsZero() {
			// Deleted on the cluster while a service still owns it: Apply
			// lets it go and creates it again.
			drift = fmt.Sprintf("%s %s was deleted on the cluster", u.GetKind(), u.GetName())
		}
		if drift != "" {
			markDrift(obj.Spec, drift)
			obj.Message = "drift: " + drift
		}
	} else {
		obj.Spec = observedDoc(u)
	}
	if u.GetDeletionTimestamp() != nil {
		obj.Status, obj.Message = target.StatusBusy, "being deleted (finalizers: "+strings.Join(u.GetFinalizers(), ", ")+")"
		return obj, nil
	}
	if k.Kind == kindSupervisorService {
		if err := health(ctx, c, u, &obj); err != nil {
			return target.Object{}, err
		}
		if err := rd.readDeployed(ctx, c, u, &obj); err != nil {
			return target.Object{}, err
		}
	}
	return obj, nil
}

// readDeployed reports drift of what kapp-controller deployed from the
// package: the resource is Busy until kapp-controller put it back (Apply
// asks it to), and its document is marked so the controllers re-apply.
func (rd *reader) readDeployed(ctx context.Context, c *cluster, pi *unstructured.Unstructured, obj *target.Object) error {
	if pi.GetAnnotations()[AnnotationDesired] == "" {
		return nil // not applied by the Service Manager: not its to correct
	}
	dr, err := rd.deployed.drift(ctx, c, pi)
	if err != nil || dr.msg == "" {
		return err
	}
	markDrift(obj.Spec, dr.msg)
	if obj.Status == target.StatusUnhealthy {
		obj.Message += "; drift: " + dr.msg
		return nil
	}
	obj.Status, obj.Message = target.StatusBusy, "drift: "+dr.msg+"; kapp-controller's reconcile puts it back"
	return nil
}

// markDrift adds the drift annotation to a reported document, so it no
// longer matches what the Service Manager wants and is applied again.
func markDrift(doc map[string]any, drift string) {
	meta, _ := doc["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		doc["metadata"] = meta
	}
	anns, _ := meta["annotations"].(map[string]any)
	if anns == nil {
		anns = map[string]any{}
		meta["annotations"] = anns
	}
	anns[AnnotationDrift] = drift
}

// observedDoc is the document of an object the Service Manager never
// applied (a pre-existing Secret), as it is on the cluster.
func observedDoc(u *unstructured.Unstructured) map[string]any {
	doc := map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "metadata": map[string]any{"name": u.GetName()}}
	for _, f := range []string{"data", "type", "immutable", "spec"} {
		if v, ok := u.Object[f]; ok {
			doc[f] = v
		}
	}
	return clone(doc)
}

// driftOf compares the parts on the cluster with what the desired document
// makes of them: a part missing, or a field the Service Manager set holding
// another value, is drift. Fields others added are not.
func driftOf(ctx context.Context, c *cluster, k target.Key, anchor *unstructured.Unstructured, doc map[string]any) (string, error) {
	r := &resource{c: c, ns: anchor.GetNamespace(), anchor: anchor}
	parts, _, err := partsOf(ctx, r, k, doc)
	if err != nil {
		return "", nil //nolint:nilerr // a document the driver cannot rebuild is reported by Apply, not as drift
	}
	for _, p := range parts {
		live := anchor
		if p.role != partAnchor {
			got, err := c.dyn.Resource(p.gvr).Namespace(r.ns).Get(ctx, p.obj.GetName(), metav1.GetOptions{})
			if apierrors.IsNotFound(err) && p.role == partValues && !usesValues(anchor, p.obj.GetName()) {
				return "the values spec.values.selector selects changed since the PackageInstall was applied", nil
			}
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("%s %s was deleted", p.obj.GetKind(), p.obj.GetName()), nil
			}
			if err != nil {
				return "", unreachable(c.name, err)
			}
			live = got
		}
		for _, f := range []string{"spec", "data", "type", "immutable"} {
			want, ok := p.obj.Object[f]
			if !ok {
				continue
			}
			if !contains(clone(map[string]any{"v": live.Object[f]})["v"], clone(map[string]any{"v": want})["v"]) {
				return fmt.Sprintf("%s %s: %s was changed on the cluster", p.obj.GetKind(), p.obj.GetName(), f), nil
			}
		}
	}
	return "", nil
}

// contains reports whether have holds everything want sets.
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return len(w) == 0 && have == nil
		}
		for k, v := range w {
			if !contains(h[k], v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !contains(h[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(have, want)
}

// list finds the anchors the service owns on every Supervisor the driver
// knows.
func (rd *reader) list(ctx context.Context, serviceID string) ([]target.Object, error) {
	sel := LabelManagedBy + "=" + managedByValue + "," + LabelPart + "=" + partAnchor
	if serviceID != "" {
		sel += "," + LabelService + "=" + hashOf(serviceID)
	}
	var out []target.Object
	for _, sup := range rd.conns.known() {
		c, err := rd.conns.cluster(sup)
		if err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
		objs, err := rd.listOwned(ctx, c, sel, serviceID)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func (rd *reader) listOwned(ctx context.Context, c *cluster, sel, serviceID string) ([]target.Object, error) {
	var out []target.Object
	for _, kind := range []string{kindSecret, kindSupervisorService} {
		k := target.Key{System: target.SystemSupervisor, Scope: c.name, Kind: kind}
		list, err := c.dyn.Resource(anchorGVR(k)).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, fmt.Errorf("list: %w", unreachable(c.name, err))
		}
		for i := range list.Items {
			u := &list.Items[i]
			if serviceID != "" && ownerOf(u).ServiceID != serviceID {
				continue
			}
			key, ok := parseKey(u.GetAnnotations()[AnnotationKey])
			if !ok || key.Scope != c.name {
				continue
			}
			obj, err := rd.read(ctx, c, key, applied{anchor: u})
			if err != nil {
				return nil, err
			}
			out = append(out, obj)
		}
	}
	return out, nil
}

// parseKey reads Key.String().
func parseKey(s string) (target.Key, bool) {
	parts := strings.SplitN(s, "/", 4)
	if len(parts) != 4 {
		return target.Key{}, false
	}
	return target.Key{System: parts[0], Scope: parts[1], Kind: parts[2], Identity: parts[3]}, true
}

// secrets returns the data of the Secrets in a Supervisor namespace.
func (rd *reader) secrets(ctx context.Context, supervisor, namespace string) (map[string]map[string][]byte, error) {
	c, err := rd.conns.cluster(supervisor)
	if err != nil {
		return nil, fmt.Errorf("secrets of %s: %w", namespace, err)
	}
	list, err := c.kube.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("secrets of %s: %w", namespace, unreachable(supervisor, err))
	}
	out := map[string]map[string][]byte{}
	for _, s := range list.Items {
		data := map[string][]byte{}
		for k, v := range s.Data {
			data[k] = v
		}
		out[s.Name] = data
	}
	return out, nil
}

// resolveValues finds the values a SupervisorService's spec.values.selector
// points at: a Secret in the service's namespace with those labels, and the
// key its path names (data.<key>). waiting says what is missing.
func resolveValues(ctx context.Context, c *cluster, ns string, sel map[string]any) (values []byte, waiting string, err error) {
	if sel == nil {
		return nil, "", nil
	}
	if kind := target.StringAt(sel, "kind"); kind != "" && kind != kindSecret {
		return nil, "", fmt.Errorf("spec.values.selector.kind %q: only Secret is supported: %w", kind, target.ErrRejected)
	}
	path := target.StringAt(sel, "path")
	if path == "" {
		path = "data.values"
	}
	field, key, ok := strings.Cut(path, ".")
	if !ok || (field != "data" && field != "stringData") {
		return nil, "", fmt.Errorf("spec.values.selector.path %q: want data.<key>: %w", path, target.ErrRejected)
	}
	var terms []string
	for k, v := range mapAt(sel, "labels") {
		terms = append(terms, fmt.Sprintf("%s=%v", k, v))
	}
	opts := metav1.ListOptions{LabelSelector: strings.Join(terms, ",")}
	if name := target.StringAt(sel, "name"); name != "" {
		opts.FieldSelector = "metadata.name=" + name
	}
	list, err := c.kube.CoreV1().Secrets(ns).List(ctx, opts)
	if err != nil {
		return nil, "", unreachable(c.name, err)
	}
	what := fmt.Sprintf("the values Secret selected by labels %q in %s", opts.LabelSelector, ns)
	switch len(list.Items) {
	case 0:
		return nil, "waiting for " + what, nil
	case 1:
	default:
		return nil, "", fmt.Errorf("%s matches %d Secrets; it must select one: %w", what, len(list.Items), target.ErrRejected)
	}
	v, ok := list.Items[0].Data[key]
	if !ok {
		return nil, "", fmt.Errorf("%s (%s) has no %s: %w", what, list.Items[0].Name, path, target.ErrRejected)
	}
	return v, "", nil
}
