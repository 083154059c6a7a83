package vcfsm_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// panicky is a target driver that panics on demand.
type panicky struct {
	target.Driver
	onGet, onDelete atomic.Bool
	gets            atomic.Int32
}

func (p *panicky) Get(ctx context.Context, k target.Key) (target.Object, error) {
	if p.onGet.Load() {
		p.gets.Add(1)
		panic("injected panic in Get")
	}
	return p.Driver.Get(ctx, k)
}

func (p *panicky) Delete(ctx context.Context, k target.Key) error {
	if p.onDelete.Load() {
		panic("injected panic in Delete")
	}
	return p.Driver.Delete(ctx, k)
}

// A panicking reconcile fails that reconcile and the controllers go on; a
// panicking step fails its operation with an error naming the panic; the
// process keeps serving throughout.
func TestPanicsAreContained(t *testing.T) {
	drv := &panicky{}
	w := newWorld(t, func(c *app.Config) {
		c.Lifecycle.WrapDriver = func(d target.Driver) target.Driver {
			drv.Driver = d
			return drv
		}
	})
	id := w.installed(t, w.publish(t, v1))

	drv.onGet.Store(true)
	poll(t, "reconcile passes that panic", 30*time.Second, func() int32 { return drv.gets.Load() }, func(n int32) bool { return n >= 3 })
	drv.onGet.Store(false)
	require.Equal(t, "Healthy", w.get(t, id).Status, "the process serves, the service is untouched")

	drv.onDelete.Store(true)
	resp := w.box.Do(t, http.MethodDelete, "/v2/vcf-services/"+id, nil)
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	history := poll(t, "the delete operation failing", 60*time.Second, func() string {
		return string(w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil).Body)
	}, func(body string) bool { return strings.Contains(body, "panic in step") })
	require.Contains(t, history, "injected panic in Delete")
	require.Equal(t, http.StatusOK, w.box.Do(t, http.MethodGet, "/v2/vcf-services", nil).Status, "still serving")
}
