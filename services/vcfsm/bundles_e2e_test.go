package vcfsm_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vcfsm/vcfsm/platform/store/etcdstore/etcdtest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// Bundles are shared through the store: replica A downloads both versions
// of a service and stops; with every bundle source down, replica B renders
// the service and rolls it back to the version A downloaded, from the
// shared store alone. Then a chunk of the shared copy is corrupted: a new
// replica C refuses it, downloads the bundle again from its (restored)
// source and shares a good copy in its place.
func TestReplicasShareBundles(t *testing.T) {
	endpoint := etcdtest.Start(t)
	w, replica := newReplicas(t)
	targets := func(c *app.Config) { c.Lifecycle.TargetAddr = serveTargets(t, w.sim) }
	a, b := replica(endpoint, targets), replica(endpoint, targets)
	wa, wb := *w, *w
	wa.box, wb.box = a, b

	src1, src2 := w.publish(t, v1), w.publish(t, v2)
	tar1, tar2 := tarName(src1), tarName(src2)
	id := wa.installed(t, src1)
	patch(t, &wa, id, `{"source":"`+src2+`"`+acceptV2+`}`, http.StatusAccepted)
	v := poll(t, "the upgrade on A", 60*time.Second, func() svcView { return wa.get(t, id) }, func(v svcView) bool {
		return v.Version == "2.0.0" && (v.Status == "Healthy" || v.Status == "Unhealthy")
	})
	require.Equal(t, "Healthy", v.Status)
	require.NoError(t, a.Stop(), "only B is left: it has downloaded nothing")

	down := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "source down for the test", http.StatusServiceUnavailable)
	})
	w.tars.Handle(tar1, down)
	w.tars.Handle(tar2, down)
	hits1, hits2 := w.tars.Hits(tar1), w.tars.Hits(tar2)

	require.Contains(t, string(wb.grants(t, id)), "arcturusRightsBundle", "B renders 2.0.0's access grants")
	resp := b.Do(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{"targetVersion": "1.0.0"})
	require.Equal(t, http.StatusAccepted, resp.Status, "%s", resp.Body)
	poll(t, "the rollback on B", 60*time.Second, func() historyView { return wb.history(t, id) }, func(h historyView) bool {
		last := h.Operations[len(h.Operations)-1]
		return last.Type == "rollback" && last.Outcome == "Succeeded"
	})
	v = wb.waitStatus(t, id, "Healthy", "Unhealthy")
	require.Equal(t, "1.0.0", v.Version)
	require.Equal(t, "Healthy", v.Status)
	require.Equal(t, hits1, w.tars.Hits(tar1), "no replica asked the source of 1.0.0")
	require.Equal(t, hits2, w.tars.Hits(tar2), "no replica asked the source of 2.0.0")

	// Corrupt the first chunk of every shared bundle.
	raw, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close() })
	ctx := context.Background()
	chunks, err := raw.Get(ctx, "/replicas/bundles/", clientv3.WithPrefix())
	require.NoError(t, err)
	good := map[string][]byte{}
	for _, kv := range chunks.Kvs {
		if !strings.HasSuffix(string(kv.Key), "#000000") {
			continue
		}
		good[string(kv.Key)] = kv.Value
		bad := bytes.Clone(kv.Value)
		bad[len(bad)-1] ^= 0xff
		_, err := raw.Put(ctx, string(kv.Key), string(bad))
		require.NoError(t, err)
	}
	require.Len(t, good, 2, "both versions are shared")

	w.tars.Handle(tar1, nil)
	w.tars.Handle(tar2, nil)
	c := replica(endpoint, targets)
	wc := *w
	wc.box = c
	require.Contains(t, string(wc.grants(t, id)), "GlobalRole", "C renders 1.0.0's access grants")
	require.Equal(t, hits1+1, w.tars.Hits(tar1), "C refused the corrupt copy of 1.0.0 and downloaded it again")
	require.Equal(t, hits2, w.tars.Hits(tar2), "C did not need 2.0.0")
	healed := 0
	for key, want := range good {
		got, err := raw.Get(ctx, key)
		require.NoError(t, err)
		// etcdstore values start with an 8-byte revision; the chunk follows.
		if bytes.Equal(want[8:], got.Kvs[0].Value[8:]) {
			healed++
		}
	}
	require.Equal(t, 1, healed, "C shared a good copy of 1.0.0 in place of the corrupt one")
}

// tarName is the file name a published source URL serves.
func tarName(source string) string { return source[strings.LastIndex(source, "/")+1:] }
