package kubernetes

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// A SupervisorService moves only forward, in the project's one version
// ordering (semver.org precedence, pre-releases included): kapp-controller
// cannot downgrade a package.
func TestRefuseDowngradeOrdersVersionsAsSemver(t *testing.T) {
	for _, c := range []struct {
		installed, wanted string
		refused           bool
	}{
		{"1.0.0-rc.9", "1.0.0-rc.10", false},
		{"1.0.0-rc.10", "1.0.0-rc.9", true},
		{"1.0.0-alpha.2", "1.0.0-alpha.10", false},
		{"1.0.0-2", "1.0.0-10", false},
		{"1.0.0-alpha", "1.0.0", false},
		{"1.0.0", "1.0.0-alpha", true},
		{"1.0.0-alpha.beta", "1.0.0-alpha.1", true},
		{"1.9.0", "1.10.0", false},
		{"1.10.0", "1.9.0", true},
		{"v1.1.0", "v1.2.0", false},
		{"1.1.0", "v1.2.0", false},
		{"1.2.0+vmware.2", "1.2.0+vmware.1", false},
		{"1.2.0", "1.2.0", false},
		{"", "1.0.0", false},
	} {
		anchor := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"version": c.installed}}}
		want := target.Desired{
			Key:  target.Key{Kind: kindSupervisorService, Identity: "arcturus"},
			Spec: map[string]any{"spec": map[string]any{"package": map[string]any{"spec": map[string]any{"version": c.wanted}}}},
		}
		err := refuseDowngrade(anchor, want)
		if !c.refused {
			require.NoError(t, err, "installed %s, wanted %s", c.installed, c.wanted)
			continue
		}
		require.ErrorIs(t, err, target.ErrIncompatible, "installed %s, wanted %s", c.installed, c.wanted)
		require.Contains(t, err.Error(), "installed at package version "+c.installed+" and cannot be downgraded to "+c.wanted)
	}
}
