package steps

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
)

// The service status from its resources: Unhealthy over Unavailable over
// Busy over Healthy.
func TestStatusOf(t *testing.T) {
	healthy := &lifecycle.Resource{Status: target.StatusHealthy}
	busy := &lifecycle.Resource{Status: target.StatusBusy}
	unreachable := &lifecycle.Resource{Status: target.StatusBusy, Unreachable: true}
	unhealthy := &lifecycle.Resource{Status: target.StatusUnhealthy}
	for _, c := range []struct {
		name string
		res  []*lifecycle.Resource
		want string
	}{
		{"none", nil, lifecycle.StatusHealthy},
		{"all healthy", []*lifecycle.Resource{healthy, healthy}, lifecycle.StatusHealthy},
		{"one pending", []*lifecycle.Resource{healthy, busy}, lifecycle.StatusBusy},
		{"one unreachable", []*lifecycle.Resource{healthy, unreachable, busy}, lifecycle.StatusUnavailable},
		{"unreachable first", []*lifecycle.Resource{unreachable, busy, healthy}, lifecycle.StatusUnavailable},
		{"one unhealthy", []*lifecycle.Resource{unreachable, unhealthy, busy}, lifecycle.StatusUnhealthy},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, statusOf(c.res))
		})
	}
}
