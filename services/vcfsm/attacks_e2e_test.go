package vcfsm_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// The regression tests of issue 25's hostile review, one per attack that
// did not hold, each against the all-in-one on loopback.

// §2: 8 connections × 16 streams without a token, each sending all but
// the last byte of a 16 MiB message, held open. grpc read every message
// before the token was checked: RSS went from 290 MiB to 2.34 GiB. Calls
// are now refused from their headers, so nothing is buffered.
func TestAttackUnauthenticatedGRPCHoldsNoMemory(t *testing.T) {
	box := onebox.Start(t)
	before := rss(t)
	const declared = 16<<20 - 1
	attackers := attack(t, box.GRPCAddr, "/vcfservices.lifecycle.v1.LifecycleService/ListServices", "", 8, 16, declared)
	held := rss(t) - before
	t.Logf("RSS before %d MiB, with 128 streams held open %+d MiB", before>>20, held>>20)
	for _, a := range attackers {
		for s := range 16 {
			st, sent := a.result(uint32(2*s + 1))
			require.Equal(t, "16", st, "every stream is answered Unauthenticated (grpc-status 16)")
			require.Less(t, sent, int64(1<<20), "the server took no more than a flow-control window of the message")
		}
	}
	require.Less(t, held, int64(64<<20), "the attack leaves RSS within +64 MiB")

	// The same against the methods callable without a token: at most two
	// anonymous requests are read at once (--grpc-max-anonymous-reads),
	// the others are refused ResourceExhausted.
	before = rss(t)
	attackers = attack(t, box.GRPCAddr, "/grpc.health.v1.Health/Check", "", 8, 16, declared)
	held = rss(t) - before
	t.Logf("health checks without a token: %+d MiB with 128 streams held open", held>>20)
	refused := 0
	for _, a := range attackers {
		for s := range 16 {
			if st, _ := a.result(uint32(2*s + 1)); st == "8" {
				refused++
			}
		}
	}
	require.GreaterOrEqual(t, refused, 8*16-2, "all but two are refused ResourceExhausted (grpc-status 8)")
	require.Less(t, held, int64(64<<20), "the attack leaves RSS within +64 MiB")
}

// §3: 2,000 requests without a token, each with a random 60 KB method,
// each answered 401. The method was a metrics label and an access-log
// field: RSS went from 73 to 258 MiB, /metrics to 2 GiB. Methods outside
// the standard set now count as OTHER.
func TestAttackRandomMethodsGrowNothing(t *testing.T) {
	box := onebox.Start(t)
	before := rss(t)
	rng := rand.New(rand.NewPCG(25, 3))
	letters := []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	method := make([]byte, 60<<10)
	client := &http.Client{Timeout: 30 * time.Second}
	for range 2000 {
		for i := range method {
			method[i] = letters[rng.IntN(len(letters))]
		}
		req, err := http.NewRequest(string(method), box.URL+"/v2/vcf-services", nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	}
	grew := rss(t) - before
	resp, err := http.Get(box.MetricsURL)
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	t.Logf("RSS %+d MiB after 2,000 random 60 KB methods; /metrics %d KiB", grew>>20, len(metrics)>>10)
	require.Less(t, grew, int64(32<<20), "RSS within +32 MiB")
	require.Less(t, len(metrics), 1<<20, "/metrics under 1 MiB")
	require.Contains(t, string(metrics), `vcfsm_http_requests_total{code="401",method="OTHER",route="unmatched"} 2000`)
}

// spinTemplate loops for hours when the user's values ask for it, so the
// service registers normally and a viewer's render preview can spin.
const spinTemplate = `#@ load("@ytt:data", "data")
#@ def spin():
#@   n = 0
#@   for i in range(100000000):
#@     for j in range(100000000):
#@       n += 1
#@     end
#@   end
#@   return n
#@ end
#@ if data.values.hookCA == "spin":
---
apiVersion: v1
kind: Secret
metadata:
  name: spin
stringData:
  n: #@ str(spin())
#@ end
`

// §5: eight viewer renders of a looping template made an administrator's
// render wait 40 s behind them in the render pool's unbounded queue. One
// principal now holds at most half the workers and half the queue; the
// rest of its renders are refused 429, and the administrator's render
// takes a free worker at once.
func TestAttackViewerCannotStarveTheRenderer(t *testing.T) {
	const timeout = 3 * time.Second
	w := newWorld(t, func(c *app.Config) {
		c.Renderer.Workers, c.Renderer.Timeout, c.Renderer.Queue = 2, timeout, 8
	})
	normal := w.create(t, w.publish(t, v1))
	w.specPatch = func(s *bundletest.BundleSpec) {
		s.Name = "spin.example.com"
		s.ConfigFiles["spin.yml"] = spinTemplate
	}
	spinning := w.create(t, w.publish(t, v1))
	w.waitStatus(t, normal, "Unresolved")
	w.waitStatus(t, spinning, "Unresolved")

	render := func(token, id string, body string) (int, http.Header, time.Duration) {
		start := time.Now()
		resp := w.box.DoWithToken(t, token, http.MethodPost, "/v2/vcf-services/"+id+"/render-resources", []byte(body))
		return resp.Status, resp.Header, time.Since(start)
	}
	// The administrator's renders differ too: each one runs in a worker.
	admin := func(n string) string {
		return `{"userOverwrite":"` + base64.StdEncoding.EncodeToString([]byte("hookCA: '' # admin "+n+"\n")) + `"}`
	}
	code, _, unloaded := render(onebox.Token, normal, admin("unloaded"))
	require.Equal(t, http.StatusOK, code)

	type answer struct {
		code  int
		retry string
		took  time.Duration
	}
	answers := make(chan answer, 8)
	for i := range 8 {
		go func() {
			// Each differs (a YAML comment), so no cache can merge them.
			spin := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("hookCA: spin # %d\n", i)))
			code, h, took := render(onebox.ViewerToken, spinning, `{"userOverwrite":"`+spin+`"}`)
			answers <- answer{code, h.Get("Retry-After"), took}
		}()
	}
	// The viewer's renders beyond its share are refused at once.
	var refused []answer
	for len(refused) < 3 {
		select {
		case a := <-answers:
			require.Equal(t, http.StatusTooManyRequests, a.code, "before any spinning render can end, only refusals come back")
			require.Equal(t, "1", a.retry)
			refused = append(refused, a)
		case <-time.After(timeout):
			t.Fatalf("only %d of the viewer's renders were refused before the first spinning one ended", len(refused))
		}
	}
	code, _, loaded := render(onebox.Token, normal, admin("loaded"))
	require.Equal(t, http.StatusOK, code)
	t.Logf("the administrator's render: %s unloaded, %s while the viewer's spin", unloaded, loaded)
	require.Less(t, loaded, timeout, "the administrator's render did not wait for a spinning one to be stopped")

	for range 5 {
		a := <-answers
		require.Equal(t, http.StatusBadRequest, a.code, "the spinning renders are stopped at --render-timeout")
	}
}

// §6: a depot redirected a download to another host of the provider's
// network, and 256 bytes of that host's answer (an internal page with a
// token in it) landed in errorDetails, which viewers read. Redirects now
// stay on the source's host unless allowed (--source-redirect-hosts), and
// another host's error body is never shown.
func TestAttackDepotRedirectReachesNoOtherHost(t *testing.T) {
	internal := bundletest.NewTarServer(t)
	internal.Handle("admin", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "internal admin page: session token=INTERNAL-SECRET-0123456789", http.StatusForbidden)
	}))
	w := newWorld(t, func(c *app.Config) {
		// The other host is trusted too: only the redirect rule stops it.
		pool := c.Lifecycle.SourceRootCAs.Clone()
		pool.AppendCertsFromPEM(internal.CA.PEM)
		c.Lifecycle.SourceRootCAs = pool
	})
	w.tars.Handle("redirect.tar", http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		http.Redirect(rw, r, internal.URL("admin"), http.StatusFound)
	}))
	id := w.create(t, w.tars.URL("redirect.tar"))
	v := w.waitStatus(t, id, "Unhealthy")

	resp := w.box.DoWithToken(t, onebox.ViewerToken, http.MethodGet, "/v2/vcf-services/"+id+"?state=true", nil)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	require.NotContains(t, string(resp.Body), "INTERNAL-SECRET", "a viewer reads nothing of the other host's answer")
	require.NotContains(t, string(resp.Body), "internal admin page")
	require.Zero(t, internal.Hits("admin"), "the other host got no request")
	require.NotEmpty(t, v.State.ErrorDetails)
	require.Contains(t, v.State.ErrorDetails[0].Message, "refusing a redirect from 127.0.0.1:")
	require.Contains(t, v.State.ErrorDetails[0].Message, "(allow it with --source-redirect-hosts)")
}

// §8: an over-long sortAsc over gRPC came back whole (15 MB) in the
// error; it is named and measured instead.
func TestAttackOverLongParameterIsNotEchoed(t *testing.T) {
	box := onebox.Start(t)
	conn, err := grpc.NewClient(box.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(bearer(onebox.Token)))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	client := lifecyclev1.NewLifecycleServiceClient(conn)
	_, err = client.ListServices(context.Background(), &lifecyclev1.ListServicesRequest{SortAsc: strings.Repeat("x", 15<<20)})
	require.Equal(t, codes.InvalidArgument, status.Code(err), "%.300v", err)
	msg := status.Convert(err).Message()
	require.Equal(t, "sortAsc: 15728640 bytes long, more than the 256 a sortAsc can be", msg)

	resp := box.Do(t, "GET", "/v2/vcf-services?sortDesc="+strings.Repeat("y", 8000), nil)
	require.Equal(t, 400, resp.Status, "%.300s", resp.Body)
	require.Contains(t, string(resp.Body), "sortDesc: 8000 bytes long, more than the 256 a sortDesc can be")
	require.Less(t, len(resp.Body), 1024)
}
