//go:build compose

package composetest

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// depot is the demo depot's reference of a version, as the replicas reach it.
func depot(version string) string { return "oci://demodepot:5000/demo/bundle:" + version }

func loadPool(path string) (*x509.CertPool, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		return nil, fmt.Errorf("%s holds no certificate", path)
	}
	return pool, nil
}

// view is the part of a service the test reads.
type view struct {
	ID             string `json:"id"`
	Version        string `json:"version"`
	Status         string `json:"status"`
	LifecycleState string `json:"lifecycleState"`
	Phase          string `json:"phase"`
	State          struct {
		Resources []struct {
			Type, Name, Status string
		} `json:"resources"`
		Operation *struct{ Type, Step, Outcome string } `json:"operation"`
	} `json:"state"`
}

type operation struct {
	ID, Type, Outcome, FromVersion, ToVersion string
	Steps                                     []struct{ Name, Status, Message string }
}

func (s *stack) get(t *testing.T, id string) view {
	var v view
	require.NoError(t, json.Unmarshal(s.must(t, http.MethodGet, "/v2/vcf-services/"+id+"?state=true", nil, http.StatusOK), &v))
	return v
}

// waitFor polls the service until ok holds.
func (s *stack) waitFor(t *testing.T, id, what string, timeout time.Duration, ok func(view) bool) view {
	deadline := time.Now().Add(timeout)
	for {
		v := s.get(t, id)
		if ok(v) {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not %s after %s; last: %+v", id, what, timeout, v)
		}
		tick(250 * time.Millisecond)
	}
}

// waitHealthyAt waits until the service runs version at Healthy with no
// operation running.
func (s *stack) waitHealthyAt(t *testing.T, id, version string) view {
	return s.waitFor(t, id, "Healthy at "+version, 3*time.Minute, func(v view) bool {
		return v.Status == "Healthy" && v.Version == version && !v.running()
	})
}

// create registers a service and reads it back at the creating answer's
// revision twice through each gateway (each balances its calls over both
// lifecycle replicas), so both replicas' views hold it before the test
// reads it without a revision: a replica's view follows the store's a few
// milliseconds behind, and only X-Vcfsm-Min-Revision waits for it.
func (s *stack) create(t *testing.T, source string) string {
	r := s.mustResponse(t, http.MethodPost, "/v2/vcf-services", map[string]any{"source": source}, http.StatusOK)
	var v view
	require.NoError(t, json.Unmarshal(r.body, &v))
	rev := r.header.Get("X-Vcfsm-Revision")
	require.NotEmpty(t, rev, "the create answer carries its revision")
	for _, gw := range append(slices.Clone(s.gateway), s.gateway...) {
		got := s.doAt(gw, http.MethodGet, "/v2/vcf-services/"+v.ID, nil, http.Header{"X-Vcfsm-Min-Revision": {rev}})
		require.Equal(t, http.StatusOK, got.status, "GET at revision %s through %s: %s", rev, gw, got.body)
	}
	s.waitFor(t, v.ID, "Unresolved", 2*time.Minute, func(v view) bool { return v.Status == "Unresolved" })
	return v.ID
}

// activate accepts the EULA, the signatures and exactly the rendered grants.
func (s *stack) activate(t *testing.T, id string) {
	inv := s.must(t, http.MethodGet, "/v2/vcf-services/"+id+"/inventory", nil, http.StatusOK)
	grants := s.must(t, http.MethodPost, "/v2/vcf-services/"+id+"/render-access-grants", json.RawMessage(`{"inventory": `+string(inv)+`}`), http.StatusOK)
	s.must(t, http.MethodPatch, "/v2/vcf-services/"+id, json.RawMessage(`{"lifecycleState":"active","accepted":{"eula":true,"signatures":true,"accessGrants":`+string(grants)+`}}`), http.StatusAccepted)
}

func (s *stack) upgrade(t *testing.T, id, version string) {
	s.must(t, http.MethodPatch, "/v2/vcf-services/"+id, map[string]any{"source": depot(version)}, http.StatusAccepted)
}

func (s *stack) rollback(t *testing.T, id, version string) {
	s.must(t, http.MethodPost, "/v2/vcf-services/"+id+"/rollback", map[string]any{"targetVersion": version}, http.StatusOK, http.StatusAccepted)
}

// lastOperation is the service's latest operation of type typ.
func (s *stack) lastOperation(t *testing.T, id, typ string) operation {
	var hist struct{ Operations []operation }
	require.NoError(t, json.Unmarshal(s.must(t, http.MethodGet, "/v2/vcf-services/"+id+"/history", nil, http.StatusOK), &hist))
	for i := len(hist.Operations) - 1; i >= 0; i-- {
		if hist.Operations[i].Type == typ {
			return hist.Operations[i]
		}
	}
	t.Fatalf("%s has no %s operation in its history", id, typ)
	return operation{}
}

// requireStepsOnce checks the journal: the operation succeeded and each of
// its steps is recorded once, Succeeded (or Skipped).
func requireStepsOnce(t *testing.T, op operation) {
	require.Equal(t, "Succeeded", op.Outcome, "%+v", op)
	seen := map[string]bool{}
	for _, st := range op.Steps {
		require.False(t, seen[st.Name], "step %s recorded twice: %+v", st.Name, op.Steps)
		seen[st.Name] = true
		require.Contains(t, []string{"Succeeded", "Skipped"}, st.Status, "step %s: %+v", st.Name, st)
	}
	require.NotEmpty(t, op.Steps)
}

// objects is what the simulated platform holds for the service: kind →
// generations, sorted.
func (s *stack) objects(t *testing.T, id string) map[string][]int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	objs, err := s.sim.List(ctx, id)
	require.NoError(t, err)
	out := map[string][]int64{}
	for _, o := range objs {
		require.Equal(t, "Healthy", string(o.Status), "%s %s", o.Kind, o.Identity)
		out[o.Kind] = append(out[o.Kind], o.Generation)
	}
	for k := range out {
		sort.Slice(out[k], func(i, j int) bool { return out[k][i] < out[k][j] })
	}
	return out
}

// requireTargets checks the simulated platform against the service: one
// object per resource the service reports, kind by kind, each Healthy at
// the generation the history of spec changes gives (an apply that changes
// nothing leaves the generation alone; a step applied with another spec
// would not).
func (s *stack) requireTargets(t *testing.T, id string, generations map[string]int64) {
	v := s.get(t, id)
	perKind := map[string]int{}
	for _, r := range v.State.Resources {
		perKind[r.Type]++
	}
	objs := s.objects(t, id)
	require.Len(t, objs, len(perKind), "kinds on the platform %v vs the service's resources %v", objs, perKind)
	for kind, n := range perKind {
		require.Len(t, objs[kind], n, "%s objects", kind)
		for _, g := range objs[kind] {
			require.Equal(t, generations[kind], g, "generation of a %s", kind)
		}
	}
}

// running: state.operation shows an operation that has not ended (its
// outcome is set when it ends).
func (v view) running() bool {
	op := v.State.Operation
	return op != nil && (op.Outcome == "" || op.Outcome == "Running" || op.Outcome == "Pending")
}

// stepOf is the step the service's running operation of type typ is at
// ("" when none runs).
func (v view) stepOf(typ string) string {
	if !v.running() || v.State.Operation.Type != typ {
		return ""
	}
	return v.State.Operation.Step
}

// other is the lifecycle replica that is not name.
func other(name string) string {
	if name == "lifecycle-1" {
		return "lifecycle-2"
	}
	return "lifecycle-1"
}

func replicaIndex(name string) int { return int(name[len(name)-1] - '0') }

// samplehookAsked counts the pre-check requests the sample hook logged.
func (s *stack) samplehookAsked(t *testing.T) int {
	out, err := docker("logs", s.container(t, "samplehook"))
	require.NoError(t, err, out)
	return strings.Count(out, `pre-check request"`)
}
