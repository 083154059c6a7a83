package vcfsm_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/logging"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// The all-in-one accepts the --service-token its own services send each
// other even when --tokens does not list it (docs/configuration.md's
// setup: --tokens for people, --service-token for the services); listed
// with a role that may not make those calls, it stops the start and says
// what to change.
func TestAllInOneAcceptsItsOwnServiceToken(t *testing.T) {
	const own = "all-in-one-own-token-0123456789ab"
	w := newWorld(t, func(c *app.Config) {
		c.Common.Tokens = cli.NewSecret("admin:admin:" + onebox.Token)
		c.Common.ServiceToken = cli.NewSecret(own)
	})
	id := w.create(t, w.publish(t, v1))
	v := w.waitStatus(t, id, "Unresolved", "Unhealthy")
	require.Equal(t, "Unresolved", v.Status, "the registration reached compatibility and the renderer with the service token: %+v", v.State)
	resp := w.box.DoWithToken(t, own, http.MethodGet, "/v2/vcf-services?page=1&pageSize=1", nil)
	require.Equal(t, http.StatusForbidden, resp.Status, "the services' own token does not open the REST edge: %s", resp.Body)

	var cfg app.Config
	cfg.Common.Tokens = cli.NewSecret("admin:admin:" + onebox.Token + ",ops:viewer:" + own)
	cfg.Common.ServiceToken = cli.NewSecret(own)
	cfg.GRPCListen, cfg.HTTPListen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Lifecycle.DataDir = t.TempDir()
	sys, err := app.Start(context.Background(), cfg, logging.Discard())
	if sys != nil {
		require.NoError(t, sys.Stop())
	}
	require.ErrorContains(t, err, `--service-token is listed in --tokens as principal "ops" with role viewer, which may not make the calls the services make to each other: give that entry role service (ops:service:<token>)`)
}
