package vcfsm_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// The all-in-one binary starts with nothing but a data directory and
// loopback ports, answers, and exits cleanly on SIGTERM.
func TestBinaryStartsAndStopsGracefully(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the all-in-one binary")
	}
	bin := filepath.Join(t.TempDir(), "vcfsm")
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/vcfsm").CombinedOutput()
	require.NoError(t, err, "%s", out)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	ready := regexp.MustCompile(`msg="vcfsm ready" rest=(http://[^ ]+)/v2`)
	metricsAt := regexp.MustCompile(`msg="serving metrics" listen=(http://[^ ]+/metrics)`)
	urls := make(chan string, 1)
	metricsURL := make(chan string, 1)
	var logs syncLog
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.add(sc.Text() + "\n")
			if m := ready.FindStringSubmatch(sc.Text()); m != nil {
				urls <- m[1]
			}
			if m := metricsAt.FindStringSubmatch(sc.Text()); m != nil {
				metricsURL <- m[1]
			}
		}
	}()
	var base string
	select {
	case base = <-urls:
	case <-time.After(60 * time.Second):
		t.Fatal("the binary did not report ready")
	}
	token, err := os.ReadFile(filepath.Join(dir, "data", "dev-token"))
	require.NoError(t, err, "the development token is written to ./data on first start")
	require.NotContains(t, logs.String(), strings.TrimSpace(string(token)), "the token is never logged")

	req, _ := http.NewRequest(http.MethodGet, base+"/v2/vcf-services?page=1&pageSize=25", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	requestID := resp.Header.Get("X-Request-Id")
	require.NotEmpty(t, requestID)

	// The request is counted on the metrics listener and logged once at
	// the gateway and once by lifecycle, under the same request id.
	metrics, err := http.Get(<-metricsURL)
	require.NoError(t, err)
	body, err := io.ReadAll(metrics.Body)
	_ = metrics.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(body), `vcfsm_http_requests_total{code="200",method="GET",route="/v2/vcf-services"} 1`)
	poll(t, "the access-log lines", 10*time.Second, logs.String, func(l string) bool {
		return regexp.MustCompile(`msg="http request" service=gateway method=GET route=/v2/vcf-services code=200 duration=\S+ principal=admin request_id=`+requestID).MatchString(l) &&
			regexp.MustCompile(`msg="grpc call" method=/vcfservices.lifecycle.v1.LifecycleService/\w+ code=OK duration=\S+ principal=admin request_id=`+requestID).MatchString(l)
	})

	// A second process on the same data directory is told which file
	// another process holds, instead of "open …: timeout" (issue 16 §7).
	second := exec.Command(bin, "--grpc-listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")
	second.Dir = dir
	out, err = second.CombinedOutput()
	require.Error(t, err, "%s", out)
	require.Regexp(t, `data/\S+\.db is locked by another process using the same data directory`, string(out))
	require.NotContains(t, string(out), ": timeout")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "a clean exit on SIGTERM")
	case <-time.After(30 * time.Second):
		t.Fatal("the binary did not stop on SIGTERM")
	}
}

// A resource that existed before the service (seeded on the simulated
// target) is adopted: ownership declared, drift reconciled, and it stays
// when the service is deleted.
func TestAdoptionOfPreExistingResource(t *testing.T) {
	seed := filepath.Join(t.TempDir(), "seed.yaml")
	require.NoError(t, os.WriteFile(seed, []byte(`
resources:
  - system: vcfa
    kind: GlobalRole
    identity: Arcturus Administrator
    spec:
      apiVersion: services.vcfa.broadcom.com/v2
      kind: GlobalRole
      spec: {name: Arcturus Administrator, rights: [RIGHT_MADE_BY_HAND]}
`), 0o600))
	w := newWorld(t, func(c *app.Config) { c.Lifecycle.SimulatorSeed = seed })
	role := target.Key{System: target.SystemVCFA, Kind: "GlobalRole", Identity: "Arcturus Administrator"}
	before, err := w.sim.Get(context.Background(), role)
	require.NoError(t, err)
	require.True(t, before.Owner.IsZero())

	id := w.installed(t, w.publish(t, v1))
	got, err := w.sim.Get(context.Background(), role)
	require.NoError(t, err)
	require.True(t, got.Adopted)
	require.Equal(t, id, got.Owner.ServiceID, "ownership declared")
	require.Equal(t, before.ExternalID, got.ExternalID, "the existing role, not a new one")
	require.NotContains(t, fmt.Sprint(got.Spec), "RIGHT_MADE_BY_HAND", "drift reconciled")
	require.Contains(t, fmt.Sprint(got.Spec), "RIGHT_ORGANIZATION_VIEW")
	require.Empty(t, got.Finalizers, "an adopted resource carries no cleanup finalizer")

	w.remove(t, id)
	left, err := w.sim.Get(context.Background(), role)
	require.NoError(t, err, "an adopted resource stays when the service goes")
	require.True(t, left.Owner.IsZero())
}

// reconfigure.events ["new-supervisor"]: a Supervisor added to the
// inventory gets the service's resources.
func TestNewSupervisorReconfigures(t *testing.T) {
	w := newWorld(t)
	id := w.installed(t, w.publish(t, v1))
	patch(t, w, id, `{"reconfigure":{"events":["new-supervisor"]}}`, http.StatusAccepted)
	w.waitStatus(t, id, "Healthy")
	grown := strings.Replace(inventoryJSON(t, w), `"regions":[`, `"regions":[{"name":"ap-south-1","storageClasses":["gold"],"supervisors":[{"name":"supervisor-ap1","id":"domain-c30","version":"9.1.0.0","kubernetesVersion":"v1.31.1","defaultStorageClass":"gold","vcenterName":"vcenter3.example.com"}]},`, 1)
	require.Equal(t, http.StatusOK, w.box.Do(t, http.MethodPut, "/v2/inventory", []byte(grown)).Status)
	_ = poll(t, "a SupervisorService on the new Supervisor", 60*time.Second, func() error {
		_, err := w.sim.Get(context.Background(), target.Key{System: target.SystemSupervisor, Scope: "supervisor-ap1", Kind: "SupervisorService", Identity: "arcturus-registry.example.com"})
		return err
	}, func(err error) bool { return err == nil })
	w.waitStatus(t, id, "Healthy")
}

// GET's extras: metadata, package, inventory, signatures (summary by
// default, details on request), for an unsigned and a signed bundle.
func TestGetExtras(t *testing.T) {
	w := newWorld(t)
	unsigned := w.create(t, w.publish(t, v1))
	w.waitStatus(t, unsigned, "Unresolved")

	resp := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+unsigned+"?metadata=true&package=true&inventory=true", nil)
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var v struct {
		Metadata    map[string]any `json:"metadata"`
		PackageData string         `json:"packageData"`
		Inventory   struct {
			Regions []map[string]any `json:"regions"`
		} `json:"inventory"`
		Signatures struct {
			IsValid        bool             `json:"isValid"`
			ValidationTime string           `json:"validationTime"`
			Details        []map[string]any `json:"details"`
		} `json:"signatures"`
		State any `json:"state"`
	}
	resp.JSON(t, &v)
	require.Equal(t, "Arcturus", v.Metadata["spec"].(map[string]any)["displayName"])
	pkg, err := base64.StdEncoding.DecodeString(v.PackageData)
	require.NoError(t, err)
	require.Contains(t, string(pkg), "refName: "+arcturusName)
	require.Len(t, v.Inventory.Regions, 2)
	require.False(t, v.Signatures.IsValid, "an unsigned bundle")
	require.NotEmpty(t, v.Signatures.ValidationTime)
	require.Nil(t, v.State, "state only with ?state=true")

	// A signed version of another service.
	signedSpec := v1
	signedSpec.Version = "1.0.1"
	w.publish(t, signedSpec) // pushes arcturus-bundle:1.0.1
	digest := bundletest.Digest(t, w.reg, w.reg.Ref("arcturus-bundle:1.0.1"))
	bundletest.Sign(t, w.reg, "arcturus-bundle", digest)
	tar := bundletest.CopyToTar(t, w.reg, w.reg.Ref("arcturus-bundle:1.0.1"))
	w.tars.Add("signed.tar", tar)
	entry := w.box.Do(t, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": w.tars.URL("signed.tar")})
	require.Equal(t, http.StatusOK, entry.Status, "%s", entry.Body)
	patch(t, w, unsigned, `{"lifecycleState":"active"}`, http.StatusBadRequest) // not accepted yet
	w.activate(t, unsigned)
	w.waitStatus(t, unsigned, "Healthy")
	patch(t, w, unsigned, `{"source":"`+w.tars.URL("signed.tar")+`"}`, http.StatusAccepted)
	poll(t, "the upgrade to the signed version", 60*time.Second, func() svcView { return w.get(t, unsigned) }, func(v svcView) bool {
		return v.Version == "1.0.1" && v.Status == "Healthy"
	})
	resp = w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+unsigned+"?signatures=true", nil)
	require.Equal(t, http.StatusOK, resp.Status)
	resp.JSON(t, &v)
	require.False(t, v.Signatures.IsValid, "a carried signature is not a verified one")
	require.Len(t, v.Signatures.Details, 1)
	require.Equal(t, digest, v.Signatures.Details[0]["digest"])
	require.Contains(t, v.Signatures.Details[0]["message"], "not verified: no --signature-keys configured")
}

// syncLog collects a child's log lines while the test reads them.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
