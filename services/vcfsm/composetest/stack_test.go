//go:build compose

// Package composetest drives the replicated compose stack
// (deploy/docker-compose.yaml) on a real Docker engine: `make e2e-compose`
// builds the images and runs it. It brings up a project of its own on free
// loopback ports, talks REST to the gateways, reads the owners of running
// operations from etcd and the simulated platform's objects from the
// simulator server, and kills, cuts off and restarts containers.
package composetest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/vcfsm/vcfsm/platform/cli"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/remote"
)

const (
	// project is TestComposeStack's compose project; other tests bring up
	// projects of their own.
	project      = "vcfsm-e2e"
	adminToken   = "dev-admin-token-change-me"
	serviceToken = "dev-internal-token-change-me"
	ownersPrefix = "/vcfsm/lifecycle/_owners/service/"
	// ownerTTL is the stack's --owner-ttl; the goal is takeover within TTL + 5 s.
	ownerTTL = 10 * time.Second
	// hookDelay keeps an upgrade in its precheck-hook step long enough to
	// kill or cut off the replica running it.
	hookDelay = 8 * time.Second
)

// stack is one running compose project.
type stack struct {
	project string
	file    string
	env     []string
	ports   map[string]int
	gateway []string // REST base URLs of gateway-1 and gateway-2
	etcd    *clientv3.Client
	sim     *remote.Client
	http    *http.Client
	next    int // which gateway the next request goes to
}

var portVars = []string{"VCFSM_HTTP_PORT", "VCFSM_HTTP_PORT_2", "VCFSM_ETCD_PORT", "VCFSM_SIMULATOR_PORT",
	"VCFSM_LIFECYCLE_1_METRICS_PORT", "VCFSM_LIFECYCLE_2_METRICS_PORT", "VCFSM_DEPOT_PORT"}

// up starts the stack and waits until every container is healthy; the
// stack is removed (volumes included) when the test ends, its logs printed
// first when it failed.
func up(t *testing.T) *stack { return upProject(t, project) }

// upProject is up with a project name of its own and extra environment
// for the compose file (VAR=value).
func upProject(t *testing.T, name string, env ...string) *stack {
	file, err := filepath.Abs("../../../deploy/docker-compose.yaml")
	require.NoError(t, err)
	s := &stack{project: name, file: file, ports: map[string]int{}, http: &http.Client{Timeout: 30 * time.Second}}
	s.env = append(os.Environ(), "VCFSM_OWNER_TTL="+ownerTTL.String(), "VCFSM_HOOK_DELAY="+hookDelay.String())
	s.env = append(s.env, env...)
	for _, v := range portVars {
		s.ports[v] = freePort(t)
		s.env = append(s.env, fmt.Sprintf("%s=%d", v, s.ports[v]))
	}
	s.gateway = []string{
		fmt.Sprintf("http://127.0.0.1:%d", s.ports["VCFSM_HTTP_PORT"]),
		fmt.Sprintf("http://127.0.0.1:%d", s.ports["VCFSM_HTTP_PORT_2"]),
	}
	_, _ = s.compose("down", "-v", "--remove-orphans")
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := s.compose("logs", "--no-color", "--tail=40", "lifecycle-1", "lifecycle-2", "gateway-1", "gateway-2", "simulator", "samplehook")
			t.Logf("stack logs:\n%s", out)
		}
		out, err := s.compose("down", "-v", "--remove-orphans")
		if err != nil {
			t.Logf("compose down: %v\n%s", err, out)
		}
	})
	start := time.Now()
	out, err := s.compose("up", "-d")
	require.NoError(t, err, "compose up:\n%s", out)
	s.waitHealthy(t, 5*time.Minute)
	t.Logf("stack up and healthy in %s", time.Since(start).Round(100*time.Millisecond))
	s.connect(t)
	return s
}

// tick is the pause between two polls of a loop that has a deadline.
func tick(d time.Duration) { <-time.After(d) }

func freePort(t *testing.T) int {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = lis.Close() }()
	return lis.Addr().(*net.TCPAddr).Port
}

func (s *stack) compose(args ...string) (string, error) {
	cmd := exec.Command("docker-compose", append([]string{"-p", s.project, "-f", s.file}, args...)...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func docker(args ...string) (string, error) {
	out, err := exec.Command("docker", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// container is the id of a compose service's container.
func (s *stack) container(t *testing.T, service string) string {
	out, err := s.compose("ps", "-q", service)
	require.NoError(t, err, out)
	id := strings.TrimSpace(out)
	require.NotEmpty(t, id, "no container for %s", service)
	return id
}

// waitHealthy waits until every running container is healthy (each must
// have a health check).
func (s *stack) waitHealthy(t *testing.T, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for {
		pending := s.unhealthy(t)
		if len(pending) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not healthy after %s: %s", timeout, strings.Join(pending, ", "))
		}
		tick(time.Second)
	}
}

func (s *stack) unhealthy(t *testing.T) []string {
	ids, err := docker("ps", "-q", "--filter", "label=com.docker.compose.project="+s.project)
	require.NoError(t, err, ids)
	var pending []string
	for _, id := range strings.Fields(ids) {
		state, err := docker("inspect", "-f", "{{.Name}} {{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}", id)
		require.NoError(t, err, state)
		// Every long-running container of the stack has a health check.
		require.False(t, strings.HasSuffix(state, " none"), "%s has no health check", state)
		if !strings.HasSuffix(state, " healthy") {
			pending = append(pending, state)
		}
	}
	return pending
}

// connect copies the development CA and certificate out of the certs
// volume and opens mTLS clients to etcd and the simulator server.
func (s *stack) connect(t *testing.T) {
	dir := t.TempDir()
	out, err := docker("cp", s.container(t, "certs")+":/home/nonroot/tls", dir)
	require.NoError(t, err, out)
	files := cli.GRPCTLS{Cert: filepath.Join(dir, "tls", "tls.crt"), Key: filepath.Join(dir, "tls", "tls.key"), CA: filepath.Join(dir, "tls", "ca.crt")}

	cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	require.NoError(t, err)
	pool, err := loadPool(files.CA)
	require.NoError(t, err)
	s.etcd, err = clientv3.New(clientv3.Config{
		Endpoints:   []string{fmt.Sprintf("https://127.0.0.1:%d", s.ports["VCFSM_ETCD_PORT"])},
		DialTimeout: 5 * time.Second,
		TLS:         &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.etcd.Close() })

	opts, err := files.DialOptions()
	require.NoError(t, err)
	conn, err := grpcx.Dial(fmt.Sprintf("127.0.0.1:%d", s.ports["VCFSM_SIMULATOR_PORT"]), serviceToken, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	s.sim = remote.NewClient(conn)
}

// response is one REST answer.
type response struct {
	status int
	body   []byte
	header http.Header
}

// do sends a REST request through the gateways in turn (both serve the
// same replicas); a transport error is returned as status 0.
func (s *stack) do(method, path string, body any) response {
	base := s.gateway[s.next%len(s.gateway)]
	s.next++
	return s.doAt(base, method, path, body, nil)
}

// doAt sends a REST request to one gateway with extra headers.
func (s *stack) doAt(base, method, path string, body any, header http.Header) response {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return response{body: []byte(err.Error())}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return response{body: []byte(err.Error())}
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, body: raw, header: resp.Header}
}

// must sends a request, retrying transport errors and 503s (a replica or
// gateway connection moving over) for up to a minute, and requires one of
// the wanted statuses.
func (s *stack) must(t *testing.T, method, path string, body any, want ...int) []byte {
	return s.mustResponse(t, method, path, body, want...).body
}

// mustResponse is must with the whole answer (its headers too).
func (s *stack) mustResponse(t *testing.T, method, path string, body any, want ...int) response {
	deadline := time.Now().Add(time.Minute)
	for {
		r := s.do(method, path, body)
		for _, w := range want {
			if r.status == w {
				return r
			}
		}
		if (r.status == 0 || r.status == http.StatusServiceUnavailable) && time.Now().Before(deadline) {
			tick(500 * time.Millisecond)
			continue
		}
		t.Fatalf("%s %s: want %v, got %d: %s", method, path, want, r.status, r.body)
	}
}

// metric reads one unlabelled sample from a lifecycle replica's /metrics.
func (s *stack) metric(t *testing.T, replica int, name string) float64 {
	port := s.ports["VCFSM_LIFECYCLE_"+strconv.Itoa(replica)+"_METRICS_PORT"]
	resp, err := s.http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			require.NoError(t, err, line)
			return v
		}
	}
	t.Fatalf("replica %d serves no %s", replica, name)
	return 0
}

// owner is the replica (lifecycle-1 or lifecycle-2) that owns the running
// operation of service id, "" when none does.
func (s *stack) owner(t *testing.T, id string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := s.etcd.Get(ctx, ownersPrefix+id)
	if err != nil || len(resp.Kvs) == 0 {
		return ""
	}
	replica := string(resp.Kvs[0].Value)
	for _, name := range []string{"lifecycle-1", "lifecycle-2"} {
		if strings.HasPrefix(replica, name+"-") {
			return name
		}
	}
	t.Fatalf("owner %q of %s is neither lifecycle replica", replica, id)
	return ""
}
