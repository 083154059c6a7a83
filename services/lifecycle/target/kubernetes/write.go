package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// writer makes the driver's writes to a cluster: server-side apply of a
// resource's parts, and updates of an object's owner and finalizers. Each
// write is handed to noteWrite, so its watch event is not reported as a
// change someone else made.
type writer struct {
	noteWrite func(*unstructured.Unstructured)
}

// applied is the outcome of applying parts.
type applied struct {
	anchor    *unstructured.Unstructured
	conflicts []string
}

// applyParts server-side applies every part, the anchor last. A conflict
// with another field manager is surfaced and then resolved in favour of
// the Service Manager, which owns these objects; a validation failure on
// an existing object means it cannot become what is wanted.
func (w *writer) applyParts(ctx context.Context, c *cluster, parts []part, own ownership, existed, dryRun bool) (applied, error) {
	var out applied
	for _, p := range parts {
		own.stamp(p)
		opts := metav1.ApplyOptions{FieldManager: FieldManager}
		if dryRun {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		res := c.dyn.Resource(p.gvr).Namespace(p.obj.GetNamespace())
		u, err := res.Apply(ctx, p.obj.GetName(), p.obj, opts)
		if apierrors.IsConflict(err) {
			out.conflicts = append(out.conflicts, fmt.Sprintf("%s %s: %s", p.obj.GetKind(), p.obj.GetName(), conflictFields(err)))
			opts.Force = true
			u, err = res.Apply(ctx, p.obj.GetName(), p.obj, opts)
		}
		switch {
		case err == nil:
		case (apierrors.IsInvalid(err) || apierrors.IsForbidden(err)) && existed:
			return out, fmt.Errorf("the existing %s %s/%s cannot take the wanted configuration: %s: %w",
				p.obj.GetKind(), p.obj.GetNamespace(), p.obj.GetName(), apiMessage(err), target.ErrIncompatible)
		case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) || apierrors.IsNotFound(err):
			return out, fmt.Errorf("%s %s/%s: the API server refused it: %s: %w", p.obj.GetKind(), p.obj.GetNamespace(), p.obj.GetName(), apiMessage(err), target.ErrRejected)
		default:
			return out, unreachable(c.name, err)
		}
		if !dryRun {
			w.noteWrite(u)
		}
		if p.role == partAnchor {
			out.anchor = u
		}
	}
	return out, nil
}

func apiMessage(err error) string {
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		return st.Status().Message
	}
	return err.Error()
}

func conflictFields(err error) string {
	var st apierrors.APIStatus
	if !errors.As(err, &st) || st.Status().Details == nil {
		return apiMessage(err)
	}
	var fields []string
	for _, c := range st.Status().Details.Causes {
		fields = append(fields, c.Message)
	}
	return strings.Join(fields, ", ")
}

// restampObject sets the owner of an object by update; on an anchor also
// the Service Manager's finalizers (none while it is being deleted).
func (w *writer) restampObject(ctx context.Context, c *cluster, gvr schema.GroupVersionResource, u *unstructured.Unstructured,
	owner target.Owner, finalizers []string, isAnchor bool) (*unstructured.Unstructured, error) {
	res := c.dyn.Resource(gvr).Namespace(u.GetNamespace())
	var out *unstructured.Unstructured
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := res.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		ann, labels := cur.GetAnnotations(), cur.GetLabels()
		if ann == nil {
			ann = map[string]string{}
		}
		if labels == nil {
			labels = map[string]string{}
		}
		if isAnchor {
			fin := foreignFinalizers(cur)
			if cur.GetDeletionTimestamp() != nil {
				finalizers = nil
			}
			for _, f := range finalizers {
				fin = append(fin, k8sFinalizer(f))
			}
			cur.SetFinalizers(fin)
			raw, _ := json.Marshal(finalizers)
			ann[AnnotationFinalizers] = string(raw)
		}
		if owner.IsZero() {
			delete(ann, AnnotationServiceID)
			delete(ann, AnnotationOwnerVersion)
			delete(labels, LabelService)
		} else {
			ann[AnnotationServiceID], ann[AnnotationOwnerVersion] = owner.ServiceID, owner.Version
			labels[LabelService] = hashOf(owner.ServiceID)
		}
		cur.SetAnnotations(ann)
		cur.SetLabels(labels)
		out, err = res.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			w.noteWrite(out)
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return u, nil
	}
	return out, unreachable(c.name, err)
}

// dropFinalizers removes the Service Manager's finalizers from an object,
// leaving other controllers' in place.
func (w *writer) dropFinalizers(ctx context.Context, c *cluster, gvr schema.GroupVersionResource, u *unstructured.Unstructured) error {
	res := c.dyn.Resource(gvr).Namespace(u.GetNamespace())
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := res.Get(ctx, u.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		others := foreignFinalizers(cur)
		if len(others) == len(cur.GetFinalizers()) {
			return nil
		}
		cur.SetFinalizers(others)
		u, err := res.Update(ctx, cur, metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			w.noteWrite(u)
		}
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return unreachable(c.name, err)
}

// abandonTerminating lets go of an anchor someone deleted while the
// Service Manager still wants it, and waits until it is gone, so it can be
// created again.
func (w *writer) abandonTerminating(ctx context.Context, r *resource, k target.Key) error {
	gvr := anchorGVR(k)
	if err := w.dropFinalizers(ctx, r.c, gvr, r.anchor); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := r.c.dyn.Resource(gvr).Namespace(r.ns).Get(ctx, r.anchor.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return unreachable(k.Scope, err)
		}
		if time.Now().After(deadline) {
			return errors.New(r.anchor.GetKind() + " " + r.ns + "/" + r.anchor.GetName() + " was deleted on the cluster and is still terminating (finalizers " +
				strings.Join(foreignFinalizers(r.anchor), ", ") + "); it is created again once it is gone")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
