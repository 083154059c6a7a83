package kubernetes

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// kappVerdict is what kapp-controller says of a PackageInstall's current
// spec: Healthy (deployed), Unhealthy (failed) or Busy, never its verdict
// on an older spec. app is the App kapp-controller made of it (nil when
// there is none yet).
//
// A verdict is about an older spec in two ways. The PackageInstall's
// status.observedGeneration is below its generation: kapp-controller has
// not reconciled the spec the driver last wrote. Or kapp-controller's
// PackageInstall controller has just marked the new generation observed:
// in that same reconcile it copies the App's last verdict (on the old
// spec) into the PackageInstall and only then updates the App, so for a
// moment the PackageInstall says ReconcileSucceeded (or ReconcileFailed)
// for the new generation while the App has deployed only the old spec
// (appLag). A values change reaches the PackageInstall's spec because its
// values Secret is named by the values (ValuesSecretName).
func kappVerdict(pi, app *unstructured.Unstructured) (status, message string) {
	conds, _, _ := unstructured.NestedSlice(pi.Object, "status", "conditions")
	state := map[string]bool{}
	for _, raw := range conds {
		cm, _ := raw.(map[string]any)
		t, _ := cm["type"].(string)
		s, _ := cm["status"].(string)
		state[t] = s == "True"
	}
	observed, _, _ := unstructured.NestedInt64(pi.Object, "status", "observedGeneration")
	useful, _, _ := unstructured.NestedString(pi.Object, "status", "usefulErrorMessage")
	friendly, _, _ := unstructured.NestedString(pi.Object, "status", "friendlyDescription")
	lag, staleFailure := appLag(pi, app)
	switch {
	case observed < pi.GetGeneration():
		return target.StatusBusy, fmt.Sprintf("waiting for kapp-controller to reconcile generation %d of the PackageInstall", pi.GetGeneration())
	case state["ReconcileFailed"] && staleFailure:
		return target.StatusBusy, lag
	case state["ReconcileFailed"]:
		return target.StatusUnhealthy, firstNonEmpty(useful, friendly, "kapp-controller failed to reconcile the PackageInstall")
	case state["Reconciling"]:
		return target.StatusBusy, firstNonEmpty(friendly, "kapp-controller is reconciling the PackageInstall")
	case !state["ReconcileSucceeded"]:
		return target.StatusBusy, "waiting for kapp-controller to reconcile the PackageInstall"
	case lag != "":
		return target.StatusBusy, lag
	}
	return target.StatusHealthy, firstNonEmpty(friendly, "Reconcile succeeded")
}

// appLag says why the App has not deployed the PackageInstall's current
// spec yet ("" when it has): it has caught up when it carries the
// PackageInstall's values Secrets and package version and has finished a
// reconcile of its own generation. staleFailure: a failure the
// PackageInstall reports may be the App's verdict on the old spec.
func appLag(pi, app *unstructured.Unstructured) (lag string, staleFailure bool) {
	if app == nil {
		return "waiting for kapp-controller to create the App of the PackageInstall", false
	}
	if _, manual := app.GetAnnotations()["ext.packaging.carvel.dev/manually-controlled"]; manual {
		return "", false // kapp-controller leaves such an App alone
	}
	useful, _, _ := unstructured.NestedString(pi.Object, "status", "usefulErrorMessage")
	appUseful, _, _ := unstructured.NestedString(app.Object, "status", "usefulErrorMessage")
	switch {
	case !appIdle(app):
		return "waiting for kapp-controller to deploy the App of the PackageInstall", true
	case !appCurrent(app, pi):
		return "waiting for kapp-controller to update the App of the PackageInstall", appFailed(app) && appUseful == useful
	case appFailed(app):
		return "waiting for the PackageInstall to report its App's failed deploy", false
	}
	return "", false
}

// appCurrent: the App carries the PackageInstall's values Secrets and
// package version.
func appCurrent(app, pi *unstructured.Unstructured) bool {
	refs := map[string]bool{}
	secretRefs(app.Object["spec"], refs)
	values, _, _ := unstructured.NestedSlice(pi.Object, "spec", "values")
	for _, raw := range values {
		name, _, _ := unstructured.NestedString(mapAt(map[string]any{"v": raw}, "v"), "secretRef", "name")
		if !refs[name] {
			return false
		}
	}
	version, _, _ := unstructured.NestedString(pi.Object, "status", "version")
	return version == "" || app.GetAnnotations()["packaging.carvel.dev/package-version"] == version
}

// usesValues: the PackageInstall takes its values from the Secret name.
func usesValues(pi *unstructured.Unstructured, name string) bool {
	refs := map[string]bool{}
	secretRefs(pi.Object["spec"], refs)
	return refs[name]
}

// secretRefs collects every secretRef name in an object's spec.
func secretRefs(v any, into map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["secretRef"].(map[string]any); ok {
			if name, ok := ref["name"].(string); ok {
				into[name] = true
			}
		}
		for _, e := range x {
			secretRefs(e, into)
		}
	case []any:
		for _, e := range x {
			secretRefs(e, into)
		}
	}
}

// appFailed: the App's last reconcile failed.
func appFailed(app *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	for _, raw := range conds {
		cm, _ := raw.(map[string]any)
		if cm["type"] == "ReconcileFailed" && cm["status"] == "True" {
			return true
		}
	}
	return false
}
