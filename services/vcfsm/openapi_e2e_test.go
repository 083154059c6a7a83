package vcfsm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// contract validates REST exchanges against the served OpenAPI document,
// converted to OpenAPI 3 as a client generator would take it.
type contract struct {
	t      *testing.T
	box    *onebox.Box
	doc    *openapi3.T
	router routers.Router
	// called: operationId -> the statuses seen.
	called map[string]map[int]bool
}

func newContract(t *testing.T, box *onebox.Box) *contract {
	t.Helper()
	resp := box.DoWithToken(t, "", http.MethodGet, "/v2/openapi.json", nil)
	require.Equal(t, http.StatusOK, resp.Status)
	var doc2 openapi2.T
	require.NoError(t, json.Unmarshal(resp.Body, &doc2))
	doc3, err := openapi2conv.ToV3(&doc2)
	require.NoError(t, err)
	require.NoError(t, doc3.Validate(context.Background()), "the converted document is valid OpenAPI 3")
	router, err := legacy.NewRouter(doc3)
	require.NoError(t, err)
	// The YAML endpoints' body is the YAML text (a string): hand it over
	// as text, as a generated client receives it.
	openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder)
	return &contract{t: t, box: box, doc: doc3, router: router, called: map[string]map[int]bool{}}
}

var validation = &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true, MultiError: true}

// call sends one request, checks it and the answer against the document,
// and returns the answer.
func (c *contract) call(method, path, token string, body any) onebox.Response {
	c.t.Helper()
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			c.t.Fatal(err)
		}
		if b, ok := body.([]byte); ok {
			raw = b
		}
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.box.URL+path, bytes.NewReader(raw))
	require.NoError(c.t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	route, params, err := c.router.FindRoute(req)
	require.NoError(c.t, err, "%s %s is not in the document", method, path)
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: validation}
	require.NoError(c.t, openapi3filter.ValidateRequest(context.Background(), in), "%s %s: the request breaks the document", method, path)

	var resp onebox.Response
	if body != nil {
		resp = c.box.DoWithToken(c.t, token, method, path, raw)
	} else {
		resp = c.box.DoWithToken(c.t, token, method, path, nil)
	}
	id := route.Operation.OperationID
	if c.called[id] == nil {
		c.called[id] = map[int]bool{}
	}
	c.called[id][resp.Status] = true
	c.checkHeaders(method, path, resp)
	bodies := [][]byte{resp.Body}
	if strings.HasSuffix(route.Path, "/watch") && resp.Status == http.StatusOK {
		bodies = lines(resp.Body) // newline-delimited JSON: each line is one answer
	}
	for _, b := range bodies {
		out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.Status, Header: resp.Header, Options: validation}
		out.SetBodyBytes(b)
		require.NoError(c.t, openapi3filter.ValidateResponse(context.Background(), out), "%s %s answered %d: %s", method, path, resp.Status, b)
	}
	return resp
}

// checkHeaders: the identity header on every answer, no transport header.
func (c *contract) checkHeaders(method, path string, resp onebox.Response) {
	c.t.Helper()
	require.Equal(c.t, "2.0.0", resp.Header.Get("X-Vcfsm-Api-Version"), "%s %s", method, path)
	for k := range resp.Header {
		require.False(c.t, strings.HasPrefix(k, "Grpcgateway-"), "%s %s answers with the transport's header %s", method, path, k)
	}
}

func lines(body []byte) [][]byte {
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			out = append(out, append([]byte(nil), l...))
		}
	}
	return out
}

func (c *contract) want(status int, resp onebox.Response) {
	c.t.Helper()
	require.Equal(c.t, status, resp.Status, "%s", resp.Body)
}

// The served OpenAPI document is one a generator can trust: docs/rest.md's
// walkthrough, the rest of the surface and the errors people meet each
// answer exactly as the document says (status, schema, enums, required
// fields, YAML bodies), and every operation of the document is met.
func TestOpenAPIDescribesEveryAnswer(t *testing.T) {
	w := newWorld(t)
	c := newContract(t, w.box)
	src1, src2 := w.publish(t, v1), w.publish(t, v2)
	inv, err := yaml.YAMLToJSON([]byte(inventoryYAML))
	require.NoError(t, err)

	// docs/rest.md, step by step.
	c.want(http.StatusOK, c.call(http.MethodPut, "/v2/inventory", onebox.Token, inv))
	created := c.call(http.MethodPost, "/v2/vcf-services", onebox.Token, map[string]any{"source": src1})
	c.want(http.StatusOK, created)
	var svc struct{ ID string }
	created.JSON(t, &svc)
	base := "/v2/vcf-services/" + url.PathEscape(svc.ID)
	c.want(http.StatusOK, c.call(http.MethodGet, base+"/watch?until=Unresolved", onebox.Token, nil))
	c.want(http.StatusOK, c.call(http.MethodGet, base, onebox.Token, nil))
	values := c.call(http.MethodPost, base+"/render-effective-values", onebox.Token, map[string]any{})
	c.want(http.StatusOK, values)
	require.Equal(t, "application/yaml", values.Header.Get("Content-Type"))
	var parsed map[string]any
	require.NoError(t, yaml.Unmarshal(values.Body, &parsed), "the body is YAML: %s", values.Body)
	c.want(http.StatusOK, c.call(http.MethodPost, base+"/render-resources", onebox.Token, map[string]any{}))
	c.want(http.StatusOK, c.call(http.MethodPost, base+"/render-value-provenance", onebox.Token, map[string]any{}))
	grants := c.call(http.MethodPost, base+"/render-access-grants", onebox.Token, map[string]any{})
	c.want(http.StatusOK, grants)
	c.want(http.StatusAccepted, c.call(http.MethodPatch, base, onebox.Token,
		[]byte(`{"lifecycleState":"active","accepted":{"eula":true,"signatures":true,"accessGrants":`+string(grants.Body)+`}}`)))
	c.want(http.StatusOK, c.call(http.MethodGet, base+"/watch?until=Healthy", onebox.Token, nil))
	c.want(http.StatusOK, c.call(http.MethodGet, base+"/state", onebox.Token, nil))
	c.want(http.StatusOK, c.call(http.MethodGet, "/v2/vcf-services?page=1&pageSize=25&filter="+url.QueryEscape("name==*arcturus*;status==Healthy"), onebox.Token, nil))
	c.want(http.StatusOK, c.call(http.MethodGet, base+"/history", onebox.Token, nil))

	openAPIRestOfTheSurface(t, w, c, base, src2)
	openAPIErrors(t, c, base, src1)

	c.want(http.StatusAccepted, c.call(http.MethodPatch, base, onebox.Token, map[string]any{"lifecycleState": "paused"}))
	c.want(http.StatusAccepted, c.call(http.MethodDelete, base+"?forceDelete=false", onebox.Token, nil))

	var missing []string
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if c.called[op.OperationID] == nil {
				missing = append(missing, method+" "+path)
			}
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "operations of the document no call met")
}

// openAPIRestOfTheSurface calls what the walkthrough does not.
func openAPIRestOfTheSurface(t *testing.T, w *world, c *contract, base, src2 string) {
	t.Helper()
	c.want(http.StatusOK, c.call(http.MethodGet, base+"?state=true&metadata=true&package=true&inventory=true&signatures=true", onebox.Token, nil))
	c.want(http.StatusOK, c.call(http.MethodGet, base+"/inventory", onebox.Token, nil))
	c.want(http.StatusOK, c.call(http.MethodGet, base+"/metadata", onebox.Token, nil))
	c.want(http.StatusOK, c.call(http.MethodGet, base+"/package", onebox.Token, nil))
	c.want(http.StatusOK, c.call(http.MethodGet, "/v2/inventory", onebox.Token, nil))
	c.want(http.StatusOK, c.call(http.MethodPost, "/v2/supervisors/supervisor-vc1/upgrade-check", onebox.Token, map[string]any{"targetVersion": "9.1.0.0"}))
	c.want(http.StatusOK, c.call(http.MethodPost, "/v2/vcf-service-versions", onebox.Token, map[string]any{"source": src2}))
	c.want(http.StatusOK, c.call(http.MethodGet, "/v2/vcf-service-versions?name=arcturus.galaxy.com", onebox.Token, nil))
	c.want(http.StatusOK, c.call(http.MethodPost, base+"/upgrade-plan", onebox.Token, map[string]any{"source": src2}))
	id := strings.TrimPrefix(base, "/v2/vcf-services/")
	settled := func(version string) {
		poll(t, "version "+version+" Healthy", time.Minute, func() svcView { return w.get(t, id) }, func(v svcView) bool {
			return v.Version == version && v.Status == "Healthy" && v.Phase == ""
		})
	}
	openAPIRollout(t, w, c, base, src2)
	settled("2.0.0")
	c.want(http.StatusAccepted, c.call(http.MethodPost, base+"/rollback", onebox.Token, map[string]any{}))
	settled("1.0.0")
	c.want(http.StatusAccepted, c.call(http.MethodPut, base, onebox.Token, map[string]any{
		"id": id, "values": map[string]any{}, "lifecycleState": "active", "labels": map[string]string{"team": "platform"},
	}))
}

// openAPIRollout upgrades in two waves through every rollout route: the
// provider's strategy, the rollout's state, pause, resume, approval, and a
// version quarantined and cleared.
func openAPIRollout(t *testing.T, w *world, c *contract, base, src2 string) {
	t.Helper()
	strategies := map[string]any{"strategies": []any{map[string]any{"name": "canary-first", "waves": []any{
		map[string]any{"name": "canary", "regions": []string{"us-west-1"}},
		map[string]any{"name": "rest", "rest": true, "approval": true, "soak": "0s"},
	}}}}
	c.want(http.StatusOK, c.call(http.MethodPut, "/v2/rollout-strategies", onebox.Token, strategies))
	c.want(http.StatusOK, c.call(http.MethodGet, "/v2/rollout-strategies", onebox.Token, nil))
	c.want(http.StatusAccepted, c.call(http.MethodPatch, base, onebox.Token, map[string]any{"source": src2, "rollout": map[string]any{"name": "canary-first"}, "accepted": json.RawMessage(`{"eula":true,"signatures":true,"accessGrants":` + v2Grants + `}`)}))
	id := strings.TrimPrefix(base, "/v2/vcf-services/")
	waitRollout(t, w, id, "WaitingApproval")
	c.want(http.StatusOK, c.call(http.MethodGet, base+"/rollout", onebox.Token, nil))
	c.want(http.StatusOK, c.call(http.MethodPost, base+"/rollout/pause", onebox.Token, map[string]any{}))
	c.want(http.StatusOK, c.call(http.MethodPost, base+"/rollout/resume", onebox.Token, map[string]any{}))
	c.want(http.StatusOK, c.call(http.MethodPost, base+"/rollout/approve", onebox.Token, map[string]any{}))
	waitRollout(t, w, id, "Succeeded")
	c.want(http.StatusBadRequest, c.call(http.MethodPost, base+"/rollout/abort", onebox.Token, map[string]any{"reason": "too late"}))
	q := "/v2/vcf-service-versions/" + arcturusName + "/1.0.0/quarantine"
	c.want(http.StatusOK, c.call(http.MethodPost, q, onebox.Token, map[string]any{"reason": "a known bad build"}))
	c.want(http.StatusOK, c.call(http.MethodDelete, q, onebox.Token, nil))
}

// openAPIErrors: the errors people meet, each documented with its status.
func openAPIErrors(t *testing.T, c *contract, base, src1 string) {
	t.Helper()
	c.want(http.StatusBadRequest, c.call(http.MethodPost, "/v2/vcf-services", onebox.Token, map[string]any{"source": "https://depot.example.com/bundle.zip"}))
	c.want(http.StatusBadRequest, c.call(http.MethodGet, base+"/watch?until=Helthy", onebox.Token, nil))
	c.want(http.StatusBadRequest, c.call(http.MethodGet, "/v2/vcf-services?page=1&pageSize=25&filter=nme%3D%3Dx", onebox.Token, nil))
	c.want(http.StatusUnauthorized, c.call(http.MethodGet, "/v2/vcf-services?page=1&pageSize=25", "", nil))
	c.want(http.StatusForbidden, c.call(http.MethodPost, "/v2/vcf-services", onebox.ViewerToken, map[string]any{"source": src1}))
	c.want(http.StatusNotFound, c.call(http.MethodGet, "/v2/vcf-services/urn:vcloud:entity:broadcom:vcfService:00000000-0000-0000-0000-000000000000", onebox.Token, nil))
	c.want(http.StatusConflict, c.call(http.MethodPost, "/v2/vcf-services", onebox.Token, map[string]any{"source": src1}))
	c.want(http.StatusRequestURITooLong, c.call(http.MethodGet, "/v2/vcf-services?page=1&pageSize=25&filter="+strings.Repeat("a", 20<<10), onebox.Token, nil))
	big := []byte(`{"source":"` + strings.Repeat("a", 5<<20) + `"}`)
	c.want(http.StatusRequestEntityTooLarge, c.call(http.MethodPost, "/v2/vcf-services", onebox.Token, big))
}
