package vcfsm_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/platform/store/etcdstore/etcdtest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// revisioned is one REST answer and the store revision it reflects.
type revisioned struct {
	status   int
	revision int64
	body     map[string]any
	raw      string
}

// doRevision sends a request with the box's token and, when minRevision
// is positive, X-Vcfsm-Min-Revision.
func doRevision(t *testing.T, b *onebox.Box, method, path, body string, minRevision int64) revisioned {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.URL+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+onebox.Token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if minRevision > 0 {
		req.Header.Set("X-Vcfsm-Min-Revision", strconv.FormatInt(minRevision, 10))
	}
	resp, err := b.Client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := revisioned{status: resp.StatusCode, raw: string(raw)}
	if h := resp.Header.Get("X-Vcfsm-Revision"); h != "" {
		out.revision, err = strconv.ParseInt(h, 10, 64)
		require.NoError(t, err)
	}
	_ = json.Unmarshal(raw, &out.body)
	return out
}

// Read-your-writes across replicas on embedded etcd: a PATCH through A
// reports the revision it wrote at; a GET through B that sends it back
// shows the write. While B is cut off from etcd, such a GET is refused
// with 503 (never answered from B's older view), and answered again, with
// the write, once B is back.
func TestReplicasReadYourWrites(t *testing.T) {
	endpoint := etcdtest.Start(t)
	proxy := etcdtest.NewProxy(t, endpoint[len("http://"):])
	w, replica := newReplicas(t)
	opts := func(c *app.Config) {
		c.Lifecycle.TargetAddr = serveTargets(t, w.sim)
		c.Lifecycle.MinRevisionWait = time.Second
	}
	a, b := replica(endpoint, opts), replica(proxy.URL(), opts)
	t.Cleanup(proxy.Restore) // before B stops, even when the test failed while B was cut off
	wa := *w
	wa.box = a
	id := wa.create(t, w.publish(t, v1))
	wa.waitStatus(t, id, "Unresolved")
	path := "/v2/vcf-services/" + id

	written := doRevision(t, a, http.MethodPatch, path, `{"autoRollback":true}`, 0)
	require.Equal(t, http.StatusAccepted, written.status, written.raw)
	require.Positive(t, written.revision, "a write answer says its revision")
	read := doRevision(t, b, http.MethodGet, path, "", written.revision)
	require.Equal(t, http.StatusOK, read.status, read.raw)
	require.Equal(t, true, read.body["autoRollback"], "B's answer holds A's write")
	require.GreaterOrEqual(t, read.revision, written.revision, "a read answer says its revision")

	proxy.Cut()
	written = doRevision(t, a, http.MethodPatch, path, `{"autoRollback":false}`, 0)
	require.Equal(t, http.StatusAccepted, written.status, written.raw)
	read = doRevision(t, b, http.MethodGet, path, "", written.revision)
	require.Equal(t, http.StatusServiceUnavailable, read.status, "B cannot have caught up: %s", read.raw)
	require.Contains(t, read.raw, "did not reach the revision")
	stale := doRevision(t, b, http.MethodGet, path, "", 0)
	require.Equal(t, true, stale.body["autoRollback"], "without the header B answers from its last view")

	proxy.Restore()
	read = poll(t, "B to catch up", 60*time.Second, func() revisioned {
		return doRevision(t, b, http.MethodGet, path, "", written.revision)
	}, func(r revisioned) bool { return r.status != http.StatusServiceUnavailable })
	require.Equal(t, http.StatusOK, read.status, read.raw)
	require.Equal(t, false, read.body["autoRollback"])

	req, err := http.NewRequest(http.MethodGet, a.URL+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+onebox.Token)
	req.Header.Set("X-Vcfsm-Min-Revision", "yesterday")
	resp, err := a.Client.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "a revision that is not a number")
}
