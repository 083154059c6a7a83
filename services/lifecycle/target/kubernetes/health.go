package kubernetes

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// health reads a SupervisorService's status from its PackageInstall's
// conditions, as kapp-controller sets them, checked against the App
// kapp-controller made of it (kappVerdict), then resolves its
// readyConditions on the live objects they select.
func health(ctx context.Context, c *cluster, pi *unstructured.Unstructured, obj *target.Object) error {
	app, err := appOf(ctx, c, pi)
	if err != nil {
		return err
	}
	status, message := kappVerdict(pi, app)
	if status != target.StatusHealthy {
		obj.Status, obj.Message = status, message
		return nil
	}
	ready, waiting, err := readyConditions(ctx, c, pi.GetNamespace(), obj.Spec)
	if err != nil {
		return err
	}
	obj.ReadyConditions = ready
	if waiting != "" {
		obj.Status, obj.Message = target.StatusBusy, waiting
		return nil
	}
	obj.Status = target.StatusHealthy
	if obj.Message == "" {
		obj.Message = message
	}
	return nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// selectable are the kinds a readyCondition's supervisorSelector may name.
var selectable = map[string]schema.GroupVersionResource{
	"Service":    gvrService,
	"Secret":     gvrSecret,
	"ConfigMap":  {Version: "v1", Resource: "configmaps"},
	"Pod":        {Version: "v1", Resource: "pods"},
	"Deployment": {Group: "apps", Version: "v1", Resource: "deployments"},
	"Ingress":    {Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"},
}

// readyConditions resolves spec.readyConditions (element-types
// supervisor-service.md) in the service's namespace: each selects objects
// by kind and labels or name; with a path the value at that path is the
// condition's value, without one the object's name is. waiting names the
// first condition that does not resolve yet.
func readyConditions(ctx context.Context, c *cluster, ns string, doc map[string]any) (map[string]string, string, error) {
	conds, _ := mapAt(doc, "spec")["readyConditions"].([]any)
	if len(conds) == 0 {
		return nil, "", nil
	}
	out := map[string]string{}
	for i, raw := range conds {
		cm, _ := raw.(map[string]any)
		name := target.StringAt(cm, "name")
		sel := mapAt(cm, "supervisorSelector")
		if name == "" || sel == nil {
			return nil, "", fmt.Errorf("spec.readyConditions[%d]: name and supervisorSelector are required: %w", i, target.ErrRejected)
		}
		v, waiting, err := resolveCondition(ctx, c, ns, name, sel)
		if err != nil {
			return nil, "", fmt.Errorf("spec.readyConditions[%d] (%s): %w", i, name, err)
		}
		if waiting != "" {
			return out, waiting, nil
		}
		out[name] = v
	}
	return out, "", nil
}

func resolveCondition(ctx context.Context, c *cluster, ns, name string, sel map[string]any) (string, string, error) {
	kind := target.StringAt(sel, "kind")
	gvr, ok := selectable[kind]
	if !ok {
		return "", "", fmt.Errorf("supervisorSelector.kind %q is not one the driver reads (Service, Secret, ConfigMap, Pod, Deployment, Ingress): %w", kind, target.ErrRejected)
	}
	var terms []string
	for k, v := range mapAt(sel, "labels") {
		terms = append(terms, fmt.Sprintf("%s=%v", k, v))
	}
	opts := metav1.ListOptions{LabelSelector: strings.Join(terms, ",")}
	if n := target.StringAt(sel, "name"); n != "" {
		opts.FieldSelector = "metadata.name=" + n
	}
	list, err := c.dyn.Resource(gvr).Namespace(ns).List(ctx, opts)
	if err != nil {
		return "", "", unreachable(c.name, err)
	}
	what := fmt.Sprintf("ready condition %s (%s %s", name, kind, firstNonEmpty(target.StringAt(sel, "name"), opts.LabelSelector))
	path := target.StringAt(sel, "path")
	if path != "" {
		what += " " + path
	}
	what += ")"
	if len(list.Items) == 0 {
		return "", "waiting for " + what + ": no such object yet", nil
	}
	obj := list.Items[0]
	if path == "" {
		return obj.GetName(), "", nil
	}
	v, ok := atPath(obj.Object, path)
	if !ok || v == "" {
		return "", "waiting for " + what, nil
	}
	return v, "", nil
}

// atPath reads "status.loadBalancer.ingress[0].ip".
func atPath(obj map[string]any, path string) (string, bool) {
	var cur any = obj
	for _, seg := range strings.Split(path, ".") {
		field, idx, hasIdx := strings.Cut(seg, "[")
		if field != "" {
			m, ok := cur.(map[string]any)
			if !ok {
				return "", false
			}
			cur = m[field]
		}
		for hasIdx {
			var rest string
			var n string
			n, rest, _ = strings.Cut(idx, "]")
			i, err := strconv.Atoi(n)
			l, ok := cur.([]any)
			if err != nil || !ok || i < 0 || i >= len(l) {
				return "", false
			}
			cur = l[i]
			idx, hasIdx = strings.CutPrefix(rest, "[")
		}
	}
	switch v := cur.(type) {
	case nil:
		return "", false
	case string:
		return v, true
	case map[string]any, []any:
		return "", false
	default:
		return fmt.Sprint(v), true
	}
}
