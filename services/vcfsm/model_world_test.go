package vcfsm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/lifecycle/target"
	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// The model test's bundle: a GlobalRole named after the service, a Secret
// on every Supervisor, and in 2.0.0 a second Secret (model-extra) on every
// Supervisor, so 1.0.0 owns 3 target resources and 2.0.0 owns 5. The
// access grants (the GlobalRole) are the same in both versions: an upgrade
// needs no new acceptance. The package allows Supervisors below 9.5.0.0.
const modelServiceYML = `---
apiVersion: services.vcfa.broadcom.com/v2
kind: GlobalRole
metadata:
  labels:
    services.vcfa.broadcom.com/name: model-admin
spec:
  name: %[1]s
  rights: ["RIGHT_ORGANIZATION_VIEW"]
  scope:
    allTenants: true
---
apiVersion: v1
kind: Secret
metadata:
  name: model-secret
  labels:
    services.vcfa.broadcom.com/name: model-secret
stringData:
  version: "%[2]s"
`

const modelExtraYML = `---
apiVersion: v1
kind: Secret
metadata:
  name: model-extra
  labels:
    services.vcfa.broadcom.com/name: model-extra
stringData:
  version: "%[1]s"
`

// modelService is one service of the model test, with both its versions
// published under its own package name.
type modelService struct {
	name, role, namespace string
	v1, v2                string
	// v1Tar is 1.0.0's tarball, for a gated download.
	v1Tar string
	id    string
}

var modelSeq atomic.Int64

// newModelService publishes 1.0.0 of a fresh package, and 2.0.0 when the
// test needs it (publishing is most of a cell's work).
func newModelService(t testing.TB, w *world, withV2 bool) *modelService {
	n := modelSeq.Add(1)
	s := &modelService{name: fmt.Sprintf("m%d.model.example", n), role: fmt.Sprintf("Model %d Administrator", n)}
	s.namespace = "svc-" + strings.ReplaceAll(s.name, ".", "-")
	s.v1, s.v1Tar = publishModel(t, w, s, "1.0.0")
	s.v2 = "https://v2.not.published.example/never.tar"
	if withV2 {
		s.v2, _ = publishModel(t, w, s, "2.0.0")
	}
	return s
}

func publishModel(t testing.TB, w *world, s *modelService, version string) (url, tar string) {
	files := fmt.Sprintf(modelServiceYML, s.role, version)
	if version != "1.0.0" {
		files += fmt.Sprintf(modelExtraYML, version)
	}
	spec := bundletest.BundleSpec{
		Name: s.name, Version: version, DisplayName: "Model", ProviderName: "Broadcom",
		Annotations: map[string]string{"appplatform.vmware.com/supervisor-version-constraints": "<9.5.0.0"},
		ValuesSchema: map[string]any{"properties": map[string]any{
			"regions": map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
			"hookCA":  map[string]any{"type": "string", "default": ""},
		}},
		ConfigFiles: map[string]string{"values.yml": valuesYML, "lib.star": "", "server.lib.yml": "", "vcf-service.yml": files},
		ValuesFiles: map[string]string{"transpiler.yml": transpilerYML},
	}
	tag := strings.ReplaceAll(s.name, ".", "-") + ":" + version
	bundletest.PushBundle(t, w.reg, bundletest.NewBundleDir(t, spec), tag)
	tar = bundletest.CopyToTar(t, w.reg, w.reg.Ref(tag))
	file := strings.ReplaceAll(s.name, ".", "-") + "-" + version + ".tar"
	w.tars.Add(file, tar)
	return w.tars.URL(file), tar
}

// gate serves 1.0.0's tarball only once open is closed: the service stays
// in its download (inactive/Busy) until then.
func (s *modelService) gate(w *world, open <-chan struct{}) {
	file := strings.ReplaceAll(s.name, ".", "-") + "-gated.tar"
	w.tars.Handle(file, http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-open:
		case <-r.Context().Done():
			return
		}
		http.ServeFile(rw, r, s.v1Tar)
	}))
	s.v1 = w.tars.URL(file)
}

func (s *modelService) roleKey() target.Key {
	return target.Key{System: target.SystemVCFA, Kind: "GlobalRole", Identity: s.role}
}

// secretFault matches one of the service's Secrets on supervisor-eu1.
func (s *modelService) secretFault(name, op, effect string) simulator.Fault {
	return simulator.Fault{System: target.SystemSupervisor, Scope: "supervisor-eu1", Kind: "Secret",
		Identity: target.SecretIdentity(s.namespace, name), Op: op, Effect: effect, Message: "model fault"}
}

func (s *modelService) roleFault(op, effect string, delay time.Duration, times int) simulator.Fault {
	return simulator.Fault{System: target.SystemVCFA, Kind: "GlobalRole", Identity: s.role, Op: op, Effect: effect,
		Delay: simulator.Duration(delay), Times: times, Message: "model fault"}
}

// reply is an answer of the REST API; the model's helpers return errors
// instead of failing a test: they run in goroutines.
type reply struct {
	Status int
	Body   []byte
}

func (r reply) String() string { return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(r.Body)) }

func call(box *onebox.Box, method, path string, body any) (reply, error) {
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	default:
		raw, err := json.Marshal(v)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, box.URL+path, rd)
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Accept", "application/json;version=41.0.0-alpha")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+onebox.Token)
	resp, err := box.Client.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	return reply{Status: resp.StatusCode, Body: raw}, err
}

// view is what the model observes of a service.
type view struct {
	Gone           bool
	State, Status  string
	Phase, Version string
	Name           string
	Outcome, Step  string
	OpMessage      string
}

func (v view) End() string {
	if v.Gone {
		return "gone"
	}
	return v.State + "/" + v.Status
}

func observe(box *onebox.Box, id string) (view, error) {
	r, err := call(box, http.MethodGet, "/v2/vcf-services/"+id+"?state=true", nil)
	if err != nil {
		return view{}, err
	}
	if r.Status == http.StatusNotFound {
		return view{Gone: true}, nil
	}
	if r.Status != http.StatusOK {
		return view{}, fmt.Errorf("GET %s: %s", id, r)
	}
	var s svcView
	if err := json.Unmarshal(r.Body, &s); err != nil {
		return view{}, err
	}
	v := view{State: s.LifecycleState, Status: s.Status, Phase: s.Phase, Version: s.Version, Name: s.Name}
	if s.State != nil && s.State.Operation != nil {
		v.Outcome, v.Step, v.OpMessage = s.State.Operation.Outcome, s.State.Operation.Step, s.State.Operation.Message
	}
	return v, nil
}

// targets classifies what the service owns on the simulated targets.
func targets(sim *simulator.Simulator, id string) (string, error) {
	objs, err := sim.List(context.Background(), id)
	if err != nil {
		return "", err
	}
	versions := map[string]int{}
	var kinds []string
	for _, o := range objs {
		versions[o.Owner.Version]++
		kinds = append(kinds, o.Kind)
	}
	sort.Strings(kinds)
	switch {
	case len(objs) == 0:
		return "none", nil
	case len(objs) == 3 && versions["1.0.0"] == 3:
		return "v1", nil
	case len(objs) == 5 && versions["2.0.0"] == 5:
		return "v2", nil
	case len(objs) == 1:
		return "only:" + objs[0].Kind, nil
	case len(objs) == 2 && versions["1.0.0"] == 2 && !slices.Contains(kinds, "GlobalRole"):
		return "v1-role", nil
	case versions["2.0.0"] > 0:
		return "partial", nil
	}
	return fmt.Sprintf("%d resources %v, versions %v", len(objs), kinds, versions), nil
}

// until polls cond every 50 ms until it holds or timeout passes.
func until(timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("not within %s", timeout)
			}
			return err
		}
		<-time.After(50 * time.Millisecond)
	}
}
