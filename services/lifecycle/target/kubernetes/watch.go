package kubernetes

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// watchState runs one informer factory per cluster over the objects the
// Service Manager manages (by label), and reports changes it did not make.
type watchState struct {
	ctx      context.Context
	cancel   context.CancelFunc
	changed  func(serviceID string)
	deployed *deployedState

	wg        sync.WaitGroup // the initial connects
	mu        sync.Mutex
	factories []dynamicinformer.DynamicSharedInformerFactory
	// ours holds "<uid>/<resourceVersion>" of the driver's own writes, so
	// their events are not reported as drift.
	ours map[string]struct{}
}

// watch starts informers on every known Supervisor (and each one
// connected later) until ctx ends or the driver closes; a second call does
// nothing.
func (cs *connections) watch(ctx context.Context, changed func(serviceID string), deployed *deployedState) {
	wctx, cancel := context.WithCancel(ctx)
	w := &watchState{ctx: wctx, cancel: cancel, changed: changed, deployed: deployed, ours: map[string]struct{}{}}
	cs.mu.Lock()
	if cs.watching != nil {
		cs.mu.Unlock()
		cancel()
		return
	}
	cs.watching = w
	var connected []*cluster
	for _, c := range cs.clusters {
		connected = append(connected, c)
	}
	cs.mu.Unlock()
	for _, c := range connected {
		w.start(c)
	}
	// Connecting starts a cluster's informers; a Supervisor without a
	// working kubeconfig is reported when it is used. In the background:
	// the caller is starting up.
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		for _, name := range cs.known() {
			if wctx.Err() != nil {
				return
			}
			_, _ = cs.cluster(name)
		}
	}()
}

// watched are the kinds whose owned objects are watched for drift.
var watched = []schema.GroupVersionResource{gvrSecret, gvrPackageInstall, gvrPackage, gvrPackageMetadata}

func (w *watchState) start(c *cluster) {
	if w.ctx.Err() != nil {
		return
	}
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.LabelSelector = LabelManagedBy + "=" + managedByValue
	})
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.event(obj, false) },
		UpdateFunc: func(_, obj any) { w.event(obj, false) },
		DeleteFunc: func(obj any) { w.event(obj, true) },
	}
	for _, gvr := range watched {
		if w.ctx.Err() != nil || !served(c, gvr) {
			continue
		}
		if _, err := f.ForResource(gvr).Informer().AddEventHandler(h); err != nil {
			continue
		}
	}
	// Services are what readyConditions usually select (a load-balancer
	// IP): not the Service Manager's objects, so watched unfiltered and
	// mapped to the service through their namespace.
	all := dynamicinformer.NewDynamicSharedInformerFactory(c.dyn, 0)
	nsInformer := f.ForResource(gvrNamespace).Informer()
	_, _ = all.ForResource(gvrService).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.inNamespace(nsInformer.GetStore(), obj) },
		UpdateFunc: func(_, obj any) { w.inNamespace(nsInformer.GetStore(), obj) },
	})
	kapp := w.watchDeployed(c, nsInformer.GetStore())
	w.mu.Lock()
	w.factories = append(w.factories, f, all, kapp)
	w.mu.Unlock()
	f.Start(w.ctx.Done())
	all.Start(w.ctx.Done())
	kapp.Start(w.ctx.Done())
}

// watchDeployed watches the objects kapp deployed (by kapp's label) of the
// kinds whose drift the driver sees, and reports those in a service's
// namespace; deletions are remembered (deployed.go).
func (w *watchState) watchDeployed(c *cluster, namespaces cache.Store) dynamicinformer.DynamicSharedInformerFactory {
	f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.dyn, 0, metav1.NamespaceAll, func(o *metav1.ListOptions) {
		o.LabelSelector = labelKappApp
	})
	for kind, gvr := range deployedKinds {
		_, _ = f.ForResource(gvr).Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { w.deployedEvent(c, namespaces, kind, obj, false) },
			UpdateFunc: func(_, obj any) { w.deployedEvent(c, namespaces, kind, obj, false) },
			DeleteFunc: func(obj any) { w.deployedEvent(c, namespaces, kind, obj, true) },
		})
	}
	return f
}

func (w *watchState) deployedEvent(c *cluster, namespaces cache.Store, kind string, obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	id := serviceOf(namespaces, u.GetNamespace())
	if id == "" {
		return
	}
	label := labelKappApp + "=" + u.GetLabels()[labelKappApp]
	key, name := deletedKey(c.name, u.GetNamespace(), label), kind+" "+u.GetName()
	if !deleted {
		w.deployed.forget(key, name)
	} else if app := w.idleApp(c, u.GetNamespace(), label); app != nil {
		// Not kapp deleting what the package no longer makes (it does that
		// while it deploys): someone else.
		w.deployed.noteDeleted(key, name, deletion{uid: string(u.GetUID()), appGeneration: app.GetGeneration()})
	}
	w.changed(id)
}

// idleApp is the App whose objects carry label when it is idle, else nil.
func (w *watchState) idleApp(c *cluster, ns, label string) *unstructured.Unstructured {
	apps, err := c.dyn.Resource(gvrApp).Namespace(ns).List(w.ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	for i := range apps.Items {
		if appLabel(&apps.Items[i]) == label && appIdle(&apps.Items[i]) {
			return &apps.Items[i]
		}
	}
	return nil
}

// inNamespace reports a change of an object in a service's namespace.
func (w *watchState) inNamespace(namespaces cache.Store, obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if id := serviceOf(namespaces, u.GetNamespace()); id != "" {
		w.changed(id)
	}
}

// serviceOf is the service whose namespace ns is, "" for none.
func serviceOf(namespaces cache.Store, ns string) string {
	item, exists, err := namespaces.GetByKey(ns)
	if err != nil || !exists {
		return ""
	}
	u, ok := item.(*unstructured.Unstructured)
	if !ok {
		return ""
	}
	return u.GetAnnotations()[AnnotationServiceID]
}

// served reports whether the cluster serves a resource (a cluster without
// kapp-controller has no PackageInstalls to watch).
func served(c *cluster, gvr schema.GroupVersionResource) bool {
	list, err := c.discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false
	}
	for _, r := range list.APIResources {
		if r.Name == gvr.Resource {
			return true
		}
	}
	return false
}

func (w *watchState) event(obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	id := u.GetAnnotations()[AnnotationServiceID]
	if id == "" {
		return
	}
	if !deleted {
		w.mu.Lock()
		_, mine := w.ours[string(u.GetUID())+"/"+u.GetResourceVersion()]
		delete(w.ours, string(u.GetUID())+"/"+u.GetResourceVersion())
		w.mu.Unlock()
		if mine {
			return
		}
	}
	w.changed(id)
}

// wrote records one of the driver's own writes.
func (w *watchState) wrote(u *unstructured.Unstructured) {
	if w == nil || u == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.ours) > 100000 {
		// Events of writes whose echo never came (the object changed again
		// first) would pile up; forgetting them only costs a reconcile.
		w.ours = map[string]struct{}{}
	}
	w.ours[string(u.GetUID())+"/"+u.GetResourceVersion()] = struct{}{}
}

func (w *watchState) stop() {
	w.cancel()
	w.wg.Wait()
	w.mu.Lock()
	fs := w.factories
	w.factories = nil
	w.mu.Unlock()
	for _, f := range fs {
		f.Shutdown()
	}
}

// noteWrite records one of the driver's writes when watching.
func (cs *connections) noteWrite(u *unstructured.Unstructured) {
	cs.mu.Lock()
	w := cs.watching
	cs.mu.Unlock()
	w.wrote(u)
}

// stopWatch stops the informers, if Watch started them.
func (cs *connections) stopWatch() {
	cs.mu.Lock()
	w := cs.watching
	cs.mu.Unlock()
	if w != nil {
		w.stop()
	}
}
