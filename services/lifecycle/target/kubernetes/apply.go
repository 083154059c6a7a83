package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/version"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

func isAPIStatus(err error) bool {
	var st apierrors.APIStatus
	return errors.As(err, &st)
}

// resource is what one target key is on a cluster right now.
type resource struct {
	c      *cluster
	ns     string
	anchor *unstructured.Unstructured // nil when absent
}

// locate finds the anchor of k. ns is where Apply wants it (may be empty
// for reads: SupervisorServices are then found by their key label).
func (cs *connections) locate(ctx context.Context, k target.Key, ns string) (*resource, error) {
	c, err := cs.cluster(k.Scope)
	if err != nil {
		return nil, err
	}
	r := &resource{c: c, ns: ns}
	var name string
	switch k.Kind {
	case kindSecret:
		if r.ns, name, err = secretName(k); err != nil {
			return nil, err
		}
	case kindSupervisorService:
		name = k.Identity
		if r.ns == "" {
			list, err := c.dyn.Resource(gvrPackageInstall).List(ctx, metav1.ListOptions{LabelSelector: LabelKey + "=" + hashOf(k.String())})
			if err != nil {
				return nil, unreachable(k.Scope, err)
			}
			if len(list.Items) == 0 {
				return r, nil
			}
			r.anchor = &list.Items[0]
			r.ns = r.anchor.GetNamespace()
			return r, nil
		}
	default:
		return nil, fmt.Errorf("the Kubernetes driver does not handle %s: %w", k, target.ErrRejected)
	}
	u, err := c.dyn.Resource(anchorGVR(k)).Namespace(r.ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return r, nil
	case err != nil:
		return nil, unreachable(k.Scope, err)
	}
	r.anchor = u
	return r, nil
}

// applier is Apply: it creates, adopts or updates a resource's objects and
// asks kapp-controller to put back what drifted in its package.
type applier struct {
	conns    *connections
	writer   *writer
	reader   *reader
	deployed *deployedState
}

func (a *applier) apply(ctx context.Context, want target.Desired) (target.Object, error) {
	ns := want.Namespace
	if want.Kind == kindSecret {
		ns = ""
	} else if ns == "" {
		return target.Object{}, fmt.Errorf("a SupervisorService needs its service's namespace: %w", target.ErrRejected)
	}
	r, err := a.conns.locate(ctx, want.Key, ns)
	if err != nil {
		return target.Object{}, err
	}
	if r.anchor != nil && r.anchor.GetDeletionTimestamp() != nil {
		// Deleted behind the Service Manager's back while it still wants
		// the resource: let it go and create it again.
		if err := a.writer.abandonTerminating(ctx, r, want.Key); err != nil {
			return target.Object{}, err
		}
		r.anchor = nil
	}
	own, message, err := claim(r, want)
	if err != nil {
		return target.Object{}, err
	}
	if err := r.c.ensureNamespace(ctx, r.ns, want.Owner); err != nil {
		return target.Object{}, err
	}
	parts, waiting, err := partsOf(ctx, r, want.Key, want.Spec)
	if err != nil {
		return target.Object{}, err
	}
	took, err := a.writer.applyParts(ctx, r.c, parts, own, r.anchor != nil, false)
	if err != nil {
		return target.Object{}, err
	}
	if err := pruneParts(ctx, r.c, want.Key, parts); err != nil {
		return target.Object{}, err
	}
	if err := a.kickOnDrift(ctx, r.c, want.Key, took.anchor); err != nil {
		return target.Object{}, err
	}
	if waiting != "" {
		return target.Object{Key: want.Key, Namespace: r.ns, Spec: want.Spec, Owner: want.Owner, Finalizers: want.Finalizers,
			Status: target.StatusBusy, Message: waiting, Adopted: own.adopted, Generation: own.generation}, nil
	}
	obj, err := a.reader.read(ctx, r.c, want.Key, took)
	if err != nil {
		return target.Object{}, err
	}
	if message != "" && obj.Status == target.StatusHealthy {
		obj.Message = message
	}
	if len(took.conflicts) > 0 {
		obj.Message = strings.TrimSpace(obj.Message + "; took back fields other field managers had changed: " + strings.Join(took.conflicts, "; "))
	}
	return obj, nil
}

// kickOnDrift asks kapp-controller to put back what it deployed from a
// SupervisorService's package when that drifted.
func (a *applier) kickOnDrift(ctx context.Context, c *cluster, k target.Key, anchor *unstructured.Unstructured) error {
	if k.Kind != kindSupervisorService || anchor == nil {
		return nil
	}
	dr, err := a.deployed.drift(ctx, c, anchor)
	if err != nil || dr.msg == "" {
		return err
	}
	_, err = a.deployed.kick(ctx, c, anchor, dr)
	return err
}

// claim decides how the wanted owner takes the resource: created,
// adopted (unowned), updated (its own) or refused (another service's, or a
// SupervisorService downgrade); message says which, empty when nothing
// changes.
func claim(r *resource, want target.Desired) (ownership, string, error) {
	own := ownership{key: want.Key, owner: want.Owner, finalizers: want.Finalizers, generation: 1}
	raw, err := json.Marshal(want.Spec)
	if err != nil {
		return own, "", fmt.Errorf("encode the document: %w: %w", err, target.ErrRejected)
	}
	own.desired = string(raw)
	if r.anchor == nil {
		return own, "Created", nil
	}
	message := "Updated"
	switch prev := ownerOf(r.anchor); {
	case prev.IsZero():
		own.adopted = true
		message = "Adopted existing resource; ownership declared"
	case prev.ServiceID != want.Owner.ServiceID:
		return own, "", fmt.Errorf("%s/%s is owned by service %s: %w", r.ns, r.anchor.GetName(), prev.ServiceID, target.ErrOwnedByOther)
	default:
		own.adopted = r.anchor.GetAnnotations()[AnnotationAdopted] == "true"
	}
	if err := refuseDowngrade(r.anchor, want); err != nil {
		return own, "", err
	}
	g, _ := strconv.ParseInt(r.anchor.GetAnnotations()[AnnotationGeneration], 10, 64)
	own.generation = max(g, 1)
	switch {
	case r.anchor.GetAnnotations()[AnnotationDesired] != own.desired:
		own.generation++
	case !ownerOf(r.anchor).IsZero():
		message = "" // nothing changed
	}
	return own, message, nil
}

// partsOf builds the objects of a resource. For a SupervisorService whose
// values Secret is not there yet, the PackageInstall is left out and
// waiting says why.
func partsOf(ctx context.Context, r *resource, k target.Key, doc map[string]any) (parts []part, waiting string, err error) {
	switch k.Kind {
	case kindSecret:
		_, name, err := secretName(k)
		if err != nil {
			return nil, "", err
		}
		s, err := secretObject(doc, r.ns, name)
		if err != nil {
			return nil, "", err
		}
		return []part{{role: partAnchor, gvr: gvrSecret, obj: s}}, "", nil
	}
	values, waiting, err := resolveValues(ctx, r.c, r.ns, mapAt(doc, "spec", "values", "selector"))
	if err != nil {
		return nil, "", err
	}
	parts, err = supervisorServiceParts(doc, r.ns, values)
	if err != nil {
		return nil, "", err
	}
	if waiting != "" {
		parts = parts[:len(parts)-1]
	}
	return parts, waiting, nil
}

// refuseDowngrade: kapp-controller does not downgrade packages, so an
// installed SupervisorService never moves to an older version (seed 002's
// SupervisorService downgrade limitation). "Older" is the project's one
// version ordering, pre-releases included (1.0.0-rc.9 < 1.0.0-rc.10 <
// 1.0.0).
func refuseDowngrade(anchor *unstructured.Unstructured, want target.Desired) error {
	if want.Kind != kindSupervisorService {
		return nil
	}
	installed, _, _ := unstructured.NestedString(anchor.Object, "status", "version")
	wanted := target.StringAt(want.Spec, "spec", "package", "spec", "version")
	if installed == "" || wanted == "" || version.Compare(wanted, installed) >= 0 {
		return nil
	}
	return fmt.Errorf("SupervisorService %s is installed at package version %s and cannot be downgraded to %s "+
		"(kapp-controller does not support package downgrades; data migrations may be irreversible). "+
		"Delete the service completely, reinstall the previous version from scratch and restore data from a backup taken before the upgrade: %w",
		want.Identity, installed, wanted, target.ErrIncompatible)
}

// pruneParts deletes objects of a resource that its document no longer
// makes (the Package of the previous version after an upgrade).
func pruneParts(ctx context.Context, c *cluster, k target.Key, parts []part) error {
	if k.Kind != kindSupervisorService {
		return nil
	}
	keep := map[string]bool{}
	for _, p := range parts {
		keep[p.gvr.Resource+"/"+p.obj.GetNamespace()+"/"+p.obj.GetName()] = true
	}
	sel := LabelKey + "=" + hashOf(k.String()) + "," + LabelPart + "!=" + partAnchor
	for _, gvr := range []schema.GroupVersionResource{gvrSecret, gvrPackage, gvrPackageMetadata} {
		list, err := c.dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return unreachable(c.name, err)
		}
		for _, u := range list.Items {
			if keep[gvr.Resource+"/"+u.GetNamespace()+"/"+u.GetName()] {
				continue
			}
			if err := c.dyn.Resource(gvr).Namespace(u.GetNamespace()).Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return unreachable(c.name, err)
			}
		}
	}
	return nil
}
