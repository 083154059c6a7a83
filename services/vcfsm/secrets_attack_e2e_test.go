package vcfsm_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vcfsm/vcfsm/platform/store/etcdstore/etcdtest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// The known secret values of issue 25 §4's test: hookCA ends up in a
// rendered Secret (the hook's CA), adminPassword is a key the values
// schema marks sensitive (format: password).
const (
	secretCA       = "SECRET-HOOK-CA-0123456789abcdef"
	secretPassword = "SECRET-ADMIN-PASSWORD-0123456789"
)

var secretOverwrite = "hookCA: " + secretCA + "\nadminPassword: " + secretPassword + "\n"

// clearCopies are the forms a secret can be found in without a key: as
// is, and base64-encoded at each of the three byte alignments it can have
// inside a longer base64 text (the value layers are base64 YAML).
func clearCopies(secret string) []string {
	out := []string{secret}
	for pad := range 3 {
		enc := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", pad) + secret))
		// Drop the characters that mix in the neighbours' bits.
		out = append(out, enc[(pad*4+2)/3+1:len(enc)-4])
	}
	return out
}

func requireNoSecret(t *testing.T, what string, data []byte) {
	t.Helper()
	for _, s := range []string{secretCA, secretPassword} {
		for _, c := range clearCopies(s) {
			require.NotContains(t, string(data), c, "%s holds %s in the clear", what, s)
		}
	}
}

// sensitiveSchema adds the schema-marked key to the arcturus values schema.
func sensitiveSchema(schema map[string]any) {
	schema["properties"].(map[string]any)["adminPassword"] = map[string]any{"type": "string", "default": "", "format": "password"}
}

// installWithSecrets installs arcturus 1.0.0 with the known secrets in its
// user values, publishes 2.0.0 and returns the service id and 2.0.0's
// source.
func installWithSecrets(t *testing.T, w *world) (string, string) {
	t.Helper()
	w.schemaPatch = sensitiveSchema
	id := w.create(t, w.publish(t, v1))
	w.waitStatus(t, id, "Unresolved")
	patch(t, w, id, `{"values":{"userOverwrite":"`+base64.StdEncoding.EncodeToString([]byte(secretOverwrite))+`"}}`, http.StatusAccepted)
	poll(t, "the values to be set", 60*time.Second, func() svcView { return w.get(t, id) }, func(v svcView) bool {
		return v.Values["userOverwrite"] != "" && (v.Status == "Unresolved" || v.Status == "Ready")
	})
	w.activate(t, id)
	v := w.waitStatus(t, id, "Healthy", "Unhealthy")
	require.Equal(t, "Healthy", v.Status, "state: %+v", v.State)
	return id, w.publish(t, v2)
}

// §4: a viewer read a service's Secret values in `values` and, in
// plaintext, from the render endpoints; the bbolt file held base64 copies.
// Every answer a viewer gets now shows <redacted> for them; operators see
// them; the store holds none of them in the clear.
func TestAttackSecretsHiddenFromViewersSealedAtRest(t *testing.T) {
	w := newWorld(t)
	id, v2src := installWithSecrets(t, w)
	base := "/v2/vcf-services/" + id

	type call struct{ method, path, body string }
	calls := []call{
		{http.MethodGet, base + "?state=true&metadata=true", ""},
		{http.MethodGet, base, ""},
		{http.MethodGet, "/v2/vcf-services?state=true", ""},
		{http.MethodGet, base + "/state", ""},
		{http.MethodGet, base + "/history", ""},
		{http.MethodPost, base + "/render-effective-values?expanded=true", "{}"},
		{http.MethodPost, base + "/render-value-provenance", "{}"},
		{http.MethodPost, base + "/render-resources", "{}"},
		{http.MethodPost, base + "/upgrade-plan", `{"source":"` + v2src + `"}`},
	}
	for _, c := range calls {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		viewer := w.box.DoWithToken(t, onebox.ViewerToken, c.method, c.path, body)
		require.Equal(t, http.StatusOK, viewer.Status, "%s %s: %s", c.method, c.path, viewer.Body)
		requireNoSecret(t, "the viewer's "+c.method+" "+c.path, viewer.Body)
		operator := w.box.DoWithToken(t, onebox.OperatorToken, c.method, c.path, body)
		require.Equal(t, http.StatusOK, operator.Status, "%s %s: %s", c.method, c.path, operator.Body)
	}

	// The value layers: the viewer sees the keys, <redacted> for the
	// secrets; the operator sees the values.
	var seen svcView
	w.box.DoWithToken(t, onebox.ViewerToken, http.MethodGet, base, nil).JSON(t, &seen)
	layer, err := base64.StdEncoding.DecodeString(seen.Values["userOverwrite"])
	require.NoError(t, err)
	require.Equal(t, "adminPassword: <redacted>\nhookCA: <redacted>\n", string(layer))
	w.box.DoWithToken(t, onebox.OperatorToken, http.MethodGet, base, nil).JSON(t, &seen)
	layer, err = base64.StdEncoding.DecodeString(seen.Values["userOverwrite"])
	require.NoError(t, err)
	require.Equal(t, secretOverwrite, string(layer))
	resources := w.box.DoWithToken(t, onebox.OperatorToken, http.MethodPost, base+"/render-resources", []byte("{}"))
	require.Contains(t, string(resources.Body), secretCA, "the operator's render shows the Secret")
	viewerResources := w.box.DoWithToken(t, onebox.ViewerToken, http.MethodPost, base+"/render-resources", []byte("{}"))
	require.Contains(t, string(viewerResources.Body), "ca.crt: <redacted>")

	// The watch stream.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.box.URL+base+"/watch?until=Healthy", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+onebox.ViewerToken)
	resp, err := w.box.Client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	require.True(t, sc.Scan(), "the watch sends the current state")
	requireNoSecret(t, "the viewer's watch", sc.Bytes())

	// At rest: the lifecycle store file holds none of them (the simulated
	// targets keep the applied Secret, as a Supervisor would).
	require.NoError(t, w.box.Stop())
	raw, err := os.ReadFile(filepath.Join(w.box.DataDir, "lifecycle.db"))
	require.NoError(t, err)
	requireNoSecret(t, "lifecycle.db", raw)
	require.NotContains(t, string(raw), base64.StdEncoding.EncodeToString([]byte(secretOverwrite)))
}

// §4 on etcd: after the same install, no key under the store's prefix
// holds a secret in the clear.
func TestSecretsSealedInEtcd(t *testing.T) {
	endpoint := etcdtest.Start(t)
	w, replica := newReplicas(t)
	w.box = replica(endpoint, func(c *app.Config) { c.Lifecycle.TargetAddr = serveTargets(t, w.sim) })
	installWithSecrets(t, w)

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	all, err := cli.Get(context.Background(), "/replicas/", clientv3.WithPrefix())
	require.NoError(t, err)
	require.NotEmpty(t, all.Kvs)
	for _, kv := range all.Kvs {
		requireNoSecret(t, "etcd key "+string(kv.Key), kv.Value)
	}
}

// Key rotation: a new first key in the keyring; a restart re-seals every
// record in the background (vcfsm_lifecycle_reseal_done turns 1), after
// which the old key can be removed and everything still opens.
func TestKeyRotationReseals(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(t.TempDir(), "keyring")
	writeKeys := func(lines ...string) {
		require.NoError(t, os.WriteFile(keyFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600))
	}
	k1 := "k1:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("1", 32)))
	k2 := "k2:" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("2", 32)))
	writeKeys(k1)
	keep := func(c *app.Config) { c.Lifecycle.DataDir, c.Lifecycle.EncryptionKeyFile = dir, keyFile }
	w := newWorld(t, keep)
	id, _ := installWithSecrets(t, w)
	require.NoError(t, w.box.Stop())
	before, err := os.ReadFile(filepath.Join(dir, "lifecycle.db"))
	require.NoError(t, err)
	require.Contains(t, string(before), `"keyId":"k1"`)

	restart := func() {
		w.box = onebox.Start(t, func(c *app.Config) {
			c.Lifecycle.SourceRootCAs = w.tars.RootCAs()
			c.Lifecycle.ReconcileInterval = 50 * time.Millisecond
		}, keep)
	}
	writeKeys(k2, k1)
	restart()
	poll(t, "the re-seal with k2", 60*time.Second, func() string { return metricsOf(t, w.box) }, func(m string) bool {
		return strings.Contains(m, "\nvcfsm_lifecycle_reseal_done 1\n")
	})
	require.Regexp(t, `\nvcfsm_lifecycle_resealed_records_total [1-9][0-9]*\n`, metricsOf(t, w.box))
	require.NoError(t, w.box.Stop())

	writeKeys(k2)
	restart()
	v := w.get(t, id)
	layer, err := base64.StdEncoding.DecodeString(v.Values["userOverwrite"])
	require.NoError(t, err)
	require.Equal(t, secretOverwrite, string(layer), "k2 alone opens the value layers")
	require.Equal(t, "Healthy", v.Status)
	st := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/state", nil)
	require.Equal(t, http.StatusOK, st.Status, "k2 alone opens the resources: %s", st.Body)
	require.Contains(t, string(st.Body), "hook-ca")
	require.Contains(t, metricsOf(t, w.box), "\nvcfsm_lifecycle_reseal_done 1\n")
	require.Contains(t, metricsOf(t, w.box), "\nvcfsm_lifecycle_resealed_records_total 0\n", "nothing was left to re-seal")
}

func metricsOf(t *testing.T, box *onebox.Box) string {
	t.Helper()
	resp, err := http.Get(box.MetricsURL)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	var b strings.Builder
	_, err = bufio.NewReader(resp.Body).WriteTo(&b)
	require.NoError(t, err)
	return b.String()
}
