package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// installerAccount is the ServiceAccount kapp-controller installs a
// service's package as; the driver creates it in the service's namespace
// bound to the namespace-scoped "admin" ClusterRole.
const installerAccount = "vcfsm-installer"

var (
	gvrNamespace      = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrServiceAccount = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	gvrRoleBinding    = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}
)

// ensureNamespace creates and labels a service's namespace, with the
// account its packages install as, once per driver and cluster.
func (c *cluster) ensureNamespace(ctx context.Context, ns string, owner target.Owner) error {
	c.nsMu.Lock()
	done := c.namespaces[ns]
	c.nsMu.Unlock()
	if done {
		return nil
	}
	labels := map[string]any{LabelManagedBy: managedByValue}
	ann := map[string]any{}
	if !owner.IsZero() {
		labels[LabelService] = hashOf(owner.ServiceID)
		ann[AnnotationServiceID] = owner.ServiceID
	}
	objs := []struct {
		gvr schema.GroupVersionResource
		obj map[string]any
	}{
		{gvrNamespace, map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": ns, "labels": labels, "annotations": ann}}},
		{gvrServiceAccount, map[string]any{"apiVersion": "v1", "kind": "ServiceAccount",
			"metadata": map[string]any{"name": installerAccount, "namespace": ns, "labels": labels}}},
		{gvrRoleBinding, map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"metadata": map[string]any{"name": installerAccount, "namespace": ns, "labels": labels},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
			"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": installerAccount, "namespace": ns}}}},
	}
	for _, o := range objs {
		u := &unstructured.Unstructured{Object: o.obj}
		res := c.dyn.Resource(o.gvr)
		var err error
		if o.gvr == gvrNamespace {
			_, err = res.Apply(ctx, ns, u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		} else {
			_, err = res.Namespace(ns).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		}
		if err != nil {
			return fmt.Errorf("namespace %s: %s %s: %w", ns, u.GetKind(), u.GetName(), unreachable(c.name, err))
		}
	}
	c.nsMu.Lock()
	c.namespaces[ns] = true
	c.nsMu.Unlock()
	return nil
}

// owners is Transfer, Release and Delete: what changes who holds a
// resource, or lets it go.
type owners struct {
	conns  *connections
	writer *writer
	reader *reader
}

func (o *owners) transfer(ctx context.Context, k target.Key, owner target.Owner, finalizers []string) (target.Object, error) {
	r, err := o.conns.locate(ctx, k, "")
	if err != nil {
		return target.Object{}, fmt.Errorf("transfer %s: %w", k, err)
	}
	if r.anchor == nil {
		return target.Object{}, fmt.Errorf("transfer %s: %w", k, target.ErrNotFound)
	}
	if prev := ownerOf(r.anchor); !prev.IsZero() && prev.ServiceID != owner.ServiceID {
		return target.Object{}, fmt.Errorf("transfer %s: owned by service %s: %w", k, prev.ServiceID, target.ErrOwnedByOther)
	}
	a, err := o.restamp(ctx, r, k, owner, finalizers)
	if err != nil {
		return target.Object{}, fmt.Errorf("transfer %s: %w", k, err)
	}
	obj, err := o.reader.read(ctx, r.c, k, a)
	if err != nil {
		return target.Object{}, fmt.Errorf("transfer %s: %w", k, err)
	}
	return obj, nil
}

func (o *owners) release(ctx context.Context, k target.Key) error {
	r, err := o.conns.locate(ctx, k, "")
	if err != nil {
		return fmt.Errorf("release %s: %w", k, err)
	}
	if r.anchor == nil {
		return nil
	}
	if _, err := o.restamp(ctx, r, k, target.Owner{}, nil); err != nil {
		return fmt.Errorf("release %s: %w", k, err)
	}
	return nil
}

// restamp re-applies a resource's parts as they are wanted now, under a
// new owner and finalizers: the same document, so nothing else changes.
func (o *owners) restamp(ctx context.Context, r *resource, k target.Key, owner target.Owner, finalizers []string) (applied, error) {
	ann := r.anchor.GetAnnotations()
	var doc map[string]any
	if raw := ann[AnnotationDesired]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			return applied{}, fmt.Errorf("annotation %s: %w", AnnotationDesired, err)
		}
	} else {
		doc = observedDoc(r.anchor)
	}
	parts, waiting, err := partsOf(ctx, r, k, doc)
	if err != nil || waiting != "" || r.anchor.GetDeletionTimestamp() != nil {
		// The document cannot be rebuilt as it was (its values Secret is
		// gone), or the anchor is being deleted (it takes no new
		// finalizers): change the owner on the live objects instead.
		return o.restampLive(ctx, r.c, k, r.anchor, owner, finalizers)
	}
	raw, _ := json.Marshal(doc)
	gen, _ := strconv.ParseInt(ann[AnnotationGeneration], 10, 64)
	own := ownership{key: k, owner: owner, finalizers: finalizers, desired: string(raw), generation: max(gen, 1),
		adopted: ann[AnnotationAdopted] == "true" || ownerOf(r.anchor).IsZero()}
	a, err := o.writer.applyParts(ctx, r.c, parts, own, true, false)
	if err != nil {
		return a, err
	}
	// The values may have changed since the last apply (a new values
	// Secret): the one the PackageInstall no longer uses goes.
	return a, pruneParts(ctx, r.c, k, parts)
}

// restampLive sets the owner on a resource's live objects by update, and
// the finalizers on its anchor (none on one being deleted).
func (o *owners) restampLive(ctx context.Context, c *cluster, k target.Key, anchor *unstructured.Unstructured, owner target.Owner, finalizers []string) (applied, error) {
	if k.Kind == kindSupervisorService {
		sel := LabelKey + "=" + hashOf(k.String()) + "," + LabelPart + "!=" + partAnchor
		for _, gvr := range []schema.GroupVersionResource{gvrSecret, gvrPackage, gvrPackageMetadata} {
			list, err := c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return applied{}, unreachable(c.name, err)
			}
			for i := range list.Items {
				if _, err := o.writer.restampObject(ctx, c, gvr, &list.Items[i], owner, nil, false); err != nil {
					return applied{}, err
				}
			}
		}
	}
	u, err := o.writer.restampObject(ctx, c, anchorGVR(k), anchor, owner, finalizers, true)
	return applied{anchor: u}, err
}

// delete deletes the anchor; once only the Service Manager's finalizers
// hold it (kapp-controller has uninstalled the package), the other parts
// are cleaned up and the finalizers removed.
func (o *owners) delete(ctx context.Context, k target.Key) error {
	r, err := o.conns.locate(ctx, k, "")
	if err != nil {
		return err
	}
	gvr := anchorGVR(k)
	if r.anchor != nil && r.anchor.GetDeletionTimestamp() == nil {
		bg := metav1.DeletePropagationBackground
		err := r.c.dyn.Resource(gvr).Namespace(r.ns).Delete(ctx, r.anchor.GetName(), metav1.DeleteOptions{PropagationPolicy: &bg})
		if apierrors.IsNotFound(err) {
			r.anchor = nil
		} else if err != nil {
			return unreachable(k.Scope, err)
		}
		if r.anchor != nil {
			if r.anchor, err = r.c.dyn.Resource(gvr).Namespace(r.ns).Get(ctx, r.anchor.GetName(), metav1.GetOptions{}); apierrors.IsNotFound(err) {
				r.anchor = nil
			} else if err != nil {
				return unreachable(k.Scope, err)
			}
		}
	}
	if r.anchor != nil {
		if others := foreignFinalizers(r.anchor); len(others) > 0 {
			return fmt.Errorf("%s %s/%s is being deleted; waiting for finalizers %s (for a PackageInstall, kapp-controller uninstalling the package)",
				r.anchor.GetKind(), r.ns, r.anchor.GetName(), strings.Join(others, ", "))
		}
	}
	if err := deleteParts(ctx, r.c, k); err != nil {
		return err
	}
	if r.anchor != nil {
		return o.writer.dropFinalizers(ctx, r.c, gvr, r.anchor)
	}
	return nil
}

// foreignFinalizers are the finalizers on an object that are not the
// Service Manager's.
func foreignFinalizers(u *unstructured.Unstructured) []string {
	var ours []string
	for _, f := range ownFinalizersAll(u) {
		ours = append(ours, k8sFinalizer(f))
	}
	var out []string
	for _, f := range u.GetFinalizers() {
		if !slices.Contains(ours, f) {
			out = append(out, f)
		}
	}
	return out
}

func ownFinalizersAll(u *unstructured.Unstructured) []string {
	var fin []string
	if raw := u.GetAnnotations()[AnnotationFinalizers]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &fin)
	}
	return fin
}

// deleteParts removes a resource's objects other than its anchor.
func deleteParts(ctx context.Context, c *cluster, k target.Key) error {
	if k.Kind != kindSupervisorService {
		return nil
	}
	sel := LabelKey + "=" + hashOf(k.String()) + "," + LabelPart + "!=" + partAnchor
	for _, gvr := range []schema.GroupVersionResource{gvrSecret, gvrPackage, gvrPackageMetadata} {
		list, err := c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return unreachable(c.name, err)
		}
		for _, u := range list.Items {
			err := c.dyn.Resource(gvr).Namespace(u.GetNamespace()).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return unreachable(c.name, err)
			}
		}
	}
	return nil
}
