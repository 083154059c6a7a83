package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What kapp-controller deployed from a SupervisorService's package, and
// drift in it. kapp-controller makes an App of each PackageInstall (same
// name and namespace) and deploys the package's objects with kapp, which
// labels each with the App's label (status.deploy.kapp.associatedResources
// .label, "kapp.k14s.io/app=<n>") and keeps the configuration it applied in
// the kapp.k14s.io/original annotation.
//
//   - Edited: a field kapp applied holds another value on the cluster
//     (fields others added are not drift), read from the live objects.
//   - Deleted: seen by the driver's informers while the App was not
//     deploying (kapp deletes what an upgrade no longer makes while it
//     deploys), and remembered until the object is back or a deploy the
//     driver asked for finished without it (then the package no longer
//     makes it). A deletion while the Service Manager was down is not seen;
//     kapp-controller's own periodic sync still restores it.
//
// Apply asks kapp-controller to reconcile at once (kick) when it finds
// drift: it flips the App's spec.paused, which kapp-controller's
// PackageInstall controller sets back, so the App's generation moves and
// kapp-controller deploys again — the same effect as
// `kctrl package installed kick`, without pausing the PackageInstall.

var gvrApp = schema.GroupVersionResource{Group: "kappctrl.k14s.io", Version: "v1alpha1", Resource: "apps"}

// deployedKinds are the kinds of package objects whose drift the driver
// sees; other kinds are put back by kapp-controller's periodic sync only.
var deployedKinds = map[string]schema.GroupVersionResource{
	"ConfigMap": {Version: "v1", Resource: "configmaps"},
	"Secret":    gvrSecret,
	"Service":   gvrService,
}

const (
	labelKappApp       = "kapp.k14s.io/app"
	annotationOriginal = "kapp.k14s.io/original"
)

// deployedState is what the driver remembers about package objects: the
// deletions it saw, and its last kick per App.
type deployedState struct {
	mu sync.Mutex
	// deleted: "<cluster>/<namespace>/<app label>" → "<Kind> <name>" →
	// the deletion.
	deleted map[string]map[string]deletion
	// kicked: "<cluster>/<namespace>/<App>" → the last kick.
	kicked map[string]kickRecord
}

// kickRecord: the App generation a kick wrote (spec.paused true;
// kapp-controller's revert is one more) and the drift it was for.
type kickRecord struct {
	generation int64
	drift      string
}

// deletion is one seen: the object's uid, and the App's generation then
// (a kick after it is one with a higher generation).
type deletion struct {
	uid           string
	appGeneration int64
}

// drift is what the driver found changed in a package's objects: msg for
// people, id for the exact state (with the object's resourceVersion or
// uid), so the same state is not kicked twice.
type drift struct{ msg, id string }

func newDeployedState() *deployedState {
	return &deployedState{deleted: map[string]map[string]deletion{}, kicked: map[string]kickRecord{}}
}

func (s *deployedState) noteDeleted(key, obj string, del deletion) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deleted[key] == nil {
		s.deleted[key] = map[string]deletion{}
	}
	s.deleted[key][obj] = del
}

func (s *deployedState) forget(key, obj string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.deleted[key], obj)
	if len(s.deleted[key]) == 0 {
		delete(s.deleted, key)
	}
}

// deletions are the remembered deletions of key.
func (s *deployedState) deletions(key string) map[string]deletion {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.deleted[key])
}

func (s *deployedState) lastKick(app string) (kickRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.kicked[app]
	return k, ok
}

func (s *deployedState) noteKick(app string, k kickRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kicked[app] = k
}

// appOf reads the App kapp-controller made of a PackageInstall; nil when
// there is none (yet).
func appOf(ctx context.Context, c *cluster, pi *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	app, err := c.dyn.Resource(gvrApp).Namespace(pi.GetNamespace()).Get(ctx, pi.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, unreachable(c.name, err)
	}
	return app, nil
}

// appLabel is the label kapp put on the App's objects ("kapp.k14s.io/app=<n>").
func appLabel(app *unstructured.Unstructured) string {
	l, _, _ := unstructured.NestedString(app.Object, "status", "deploy", "kapp", "associatedResources", "label")
	return l
}

// appIdle: the App has no deploy pending or running.
func appIdle(app *unstructured.Unstructured) bool {
	observed, _, _ := unstructured.NestedInt64(app.Object, "status", "observedGeneration")
	if observed != app.GetGeneration() {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	for _, raw := range conds {
		cm, _ := raw.(map[string]any)
		if cm["type"] == "Reconciling" && cm["status"] == "True" {
			return false
		}
	}
	return true
}

func deletedKey(cluster, ns, label string) string { return cluster + "/" + ns + "/" + label }

// drift finds the first drift of the objects kapp-controller
// deployed for a PackageInstall (msg "" for none).
func (s *deployedState) drift(ctx context.Context, c *cluster, pi *unstructured.Unstructured) (drift, error) {
	app, err := appOf(ctx, c, pi)
	if err != nil || app == nil {
		return drift{}, err
	}
	label := appLabel(app)
	if label == "" {
		return drift{}, nil
	}
	ns := pi.GetNamespace()
	for _, kind := range []string{"ConfigMap", "Secret", "Service"} {
		list, err := c.dyn.Resource(deployedKinds[kind]).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: label})
		if err != nil {
			return drift{}, unreachable(c.name, err)
		}
		for i := range list.Items {
			u := &list.Items[i]
			if f := editedField(u); f != "" {
				return drift{msg: fmt.Sprintf("%s %s/%s deployed by kapp-controller from the package: %s was changed on the cluster", kind, ns, u.GetName(), f),
					id: "edited " + kind + " " + u.GetName() + " " + u.GetResourceVersion()}, nil
			}
		}
	}
	return s.deletedDrift(ctx, c, app, deletedKey(c.name, ns, label))
}

// editedField names a field whose live value is not what kapp applied.
func editedField(u *unstructured.Unstructured) string {
	raw := u.GetAnnotations()[annotationOriginal]
	if raw == "" {
		return ""
	}
	var orig map[string]any
	if json.Unmarshal([]byte(raw), &orig) != nil {
		return ""
	}
	for _, f := range []string{"data", "stringData", "spec", "type"} {
		want, ok := orig[f]
		if !ok || f == "stringData" {
			continue
		}
		if !contains(clone(map[string]any{"v": u.Object[f]})["v"], clone(map[string]any{"v": want})["v"]) {
			return f
		}
	}
	return ""
}

// deletedDrift reports a remembered deletion that still stands, and drops
// those that no longer do: the object is back, or a deploy the driver
// asked for after seeing the deletion finished without making it.
func (s *deployedState) deletedDrift(ctx context.Context, c *cluster, app *unstructured.Unstructured, key string) (drift, error) {
	last, kicked := s.lastKick(c.name + "/" + app.GetNamespace() + "/" + app.GetName())
	observed, _, _ := unstructured.NestedInt64(app.Object, "status", "observedGeneration")
	deleted := s.deletions(key)
	for _, obj := range slices.Sorted(maps.Keys(deleted)) {
		kind, name, _ := strings.Cut(obj, " ")
		del := deleted[obj]
		// A kick after the deletion whose deploy has finished.
		redeployed := kicked && last.generation > del.appGeneration && observed > last.generation && appIdle(app)
		_, err := c.dyn.Resource(deployedKinds[kind]).Namespace(app.GetNamespace()).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil, redeployed && apierrors.IsNotFound(err):
			s.forget(key, obj)
		case apierrors.IsNotFound(err):
			return drift{msg: fmt.Sprintf("%s %s/%s deployed by kapp-controller from the package was deleted on the cluster", kind, app.GetNamespace(), name),
				id: "deleted " + obj + " " + del.uid}, nil
		default:
			return drift{}, unreachable(c.name, err)
		}
	}
	return drift{}, nil
}

// kick asks kapp-controller to reconcile a PackageInstall's App now, not
// while it deploys anyway, and once per drifted state: one that outlived
// a kick is one kapp-controller does not put back. It reports whether it
// asked.
func (s *deployedState) kick(ctx context.Context, c *cluster, pi *unstructured.Unstructured, dr drift) (bool, error) {
	app, err := appOf(ctx, c, pi)
	if err != nil || app == nil || !appIdle(app) {
		return false, err
	}
	id := c.name + "/" + app.GetNamespace() + "/" + app.GetName()
	if last, ok := s.lastKick(id); ok && last.drift == dr.id {
		return false, nil
	}
	if err := unstructured.SetNestedField(app.Object, true, "spec", "paused"); err != nil {
		return false, err
	}
	out, err := c.dyn.Resource(gvrApp).Namespace(app.GetNamespace()).Update(ctx, app, metav1.UpdateOptions{FieldManager: FieldManager})
	if err != nil {
		if apierrors.IsConflict(err) {
			return false, nil // kapp-controller wrote it first: it is at work
		}
		return false, unreachable(c.name, err)
	}
	s.noteKick(id, kickRecord{generation: out.GetGeneration(), drift: dr.id})
	return true, nil
}
