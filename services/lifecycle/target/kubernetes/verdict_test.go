package kubernetes

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// pkgInstall is a PackageInstall at generation gen taking its values from
// secret, with the status kapp-controller v0.53.1 writes: observed, one
// condition, the package version and a usefulErrorMessage.
func pkgInstall(gen, observed int64, cond, secret, version, useful string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"values": []any{map[string]any{"secretRef": map[string]any{"name": secret}}}},
		"status": map[string]any{"observedGeneration": observed, "version": version, "usefulErrorMessage": useful,
			"conditions": []any{map[string]any{"type": cond, "status": "True"}}}}}
	u.SetGeneration(gen)
	return u
}

// kappApp is the App kapp-controller makes of it (NewApp): the package
// version annotation and the values Secret in its ytt step's valuesFrom.
func kappApp(gen, observed int64, cond, secret, version, useful string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"template": []any{map[string]any{"ytt": map[string]any{
			"valuesFrom": []any{map[string]any{"secretRef": map[string]any{"name": secret}}}}}}},
		"status": map[string]any{"observedGeneration": observed, "usefulErrorMessage": useful,
			"conditions": []any{map[string]any{"type": cond, "status": "True"}}}}}
	u.SetGeneration(gen)
	u.SetAnnotations(map[string]string{"packaging.carvel.dev/package-version": version})
	return u
}

// The states kapp-controller v0.53.1 passes through after the driver
// writes a new PackageInstall spec (packageinstall.go: reconcile marks the
// generation observed, copies the App's last verdict, then updates the
// App). Only the App's verdict on the new spec is Healthy or Unhealthy.
func TestKappVerdictIsNeverAboutAnOlderSpec(t *testing.T) {
	const old, cur = "arcturus-values-old", "arcturus-values-new"
	const ytt = "ytt: Error: no_such_value"
	for _, c := range []struct {
		name    string
		pi, app *unstructured.Unstructured
		want    string
		message string
	}{
		{"the new spec not yet observed", pkgInstall(2, 1, "ReconcileSucceeded", cur, "1.0.0", ""),
			kappApp(1, 1, "ReconcileSucceeded", old, "1.0.0", ""), target.StatusBusy, "generation 2"},
		{"observed, the old App's success copied, the App not yet updated", pkgInstall(2, 2, "ReconcileSucceeded", cur, "1.0.0", ""),
			kappApp(1, 1, "ReconcileSucceeded", old, "1.0.0", ""), target.StatusBusy, "update the App"},
		{"the App updated, not yet reconciled", pkgInstall(2, 2, "ReconcileSucceeded", cur, "1.0.0", ""),
			kappApp(2, 1, "ReconcileSucceeded", cur, "1.0.0", ""), target.StatusBusy, "deploy the App"},
		{"the App deploying", pkgInstall(2, 2, "Reconciling", cur, "1.0.0", ""),
			kappApp(2, 2, "Reconciling", cur, "1.0.0", ""), target.StatusBusy, "reconciling"},
		{"the App deployed the new spec", pkgInstall(2, 2, "ReconcileSucceeded", cur, "1.0.0", ""),
			kappApp(2, 2, "ReconcileSucceeded", cur, "1.0.0", ""), target.StatusHealthy, "Reconcile succeeded"},
		{"the App failed on the new spec, the PackageInstall not yet told", pkgInstall(2, 2, "ReconcileSucceeded", cur, "1.0.0", ""),
			kappApp(2, 2, "ReconcileFailed", cur, "1.0.0", ytt), target.StatusBusy, "failed deploy"},
		{"the App failed on the new spec", pkgInstall(2, 2, "ReconcileFailed", cur, "1.0.0", ytt),
			kappApp(2, 2, "ReconcileFailed", cur, "1.0.0", ytt), target.StatusUnhealthy, ytt},
		{"the old App's failure copied", pkgInstall(2, 2, "ReconcileFailed", cur, "1.0.0", ytt),
			kappApp(1, 1, "ReconcileFailed", old, "1.0.0", ytt), target.StatusBusy, "update the App"},
		{"the PackageInstall's own failure", pkgInstall(2, 2, "ReconcileFailed", cur, "1.0.0", "Stopped installing matched version"),
			kappApp(1, 1, "ReconcileSucceeded", old, "1.0.0", ""), target.StatusUnhealthy, "Stopped installing"},
		{"an upgrade the App does not carry yet", pkgInstall(2, 2, "ReconcileSucceeded", cur, "2.0.0", ""),
			kappApp(1, 1, "ReconcileSucceeded", cur, "1.0.0", ""), target.StatusBusy, "update the App"},
		{"no App yet", pkgInstall(1, 1, "ReconcileSucceeded", cur, "1.0.0", ""), nil, target.StatusBusy, "create the App"},
	} {
		status, message := kappVerdict(c.pi, c.app)
		require.Equal(t, c.want, status, "%s: %s", c.name, message)
		require.Contains(t, message, c.message, c.name)
	}
}

// The values Secret's name follows the values: a change is a new name (a
// new PackageInstall spec), going back is the old name again.
func TestValuesSecretNameFollowsTheValues(t *testing.T) {
	a, b := ValuesSecretName("arcturus", []byte("replicas: 3\n")), ValuesSecretName("arcturus", []byte("replicas: 5\n"))
	require.NotEqual(t, a, b)
	require.Equal(t, a, ValuesSecretName("arcturus", []byte("replicas: 3\n")))
	require.Regexp(t, `^arcturus-values-[0-9a-f]{10}$`, a)
}

// A refName of the longest a Package allows (a 253-character DNS
// subdomain) still gives a valid Secret name, one per values (before, the
// name ran to 271 characters and the API server refused the Secret).
func TestValuesSecretNameOfTheLongestRefNameIsValid(t *testing.T) {
	for _, ref := range []string{
		strings.Repeat("a", 253),
		strings.Repeat("a", 234) + "." + strings.Repeat("b", 18), // the cut lands on the dot
		strings.Repeat("abcdefgh.", 28)[:251] + "ab",
	} {
		a, b := ValuesSecretName(ref, []byte("replicas: 3\n")), ValuesSecretName(ref, []byte("replicas: 5\n"))
		require.Empty(t, validation.IsDNS1123Subdomain(a), "%q", a)
		require.NotEqual(t, a, b)
		require.True(t, strings.HasPrefix(a, ref[:200]), a)
	}
}
