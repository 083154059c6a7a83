package app

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
)

type wrapped struct{ body any }

func (w wrapped) XXX_ResponseBody() interface{} { return w.body }

func TestBodyMarshaler(t *testing.T) {
	m := &bodyMarshaler{Marshaler: &runtime.JSONPb{}}
	doc := &commonv1.YamlDocument{ContentType: "application/yaml", Data: []byte("a: 1\n")}
	require.Equal(t, "application/yaml", m.ContentType(wrapped{doc}), "a YAML response body keeps its type")
	raw, err := m.Marshal(doc)
	require.NoError(t, err)
	require.Equal(t, "a: 1\n", string(raw), "and is written verbatim")
	require.Equal(t, "application/yaml", m.ContentType(&commonv1.YamlDocument{}), "YAML is the default type of a document")

	svc := &lifecyclev1.VcfService{Id: "x"}
	require.Equal(t, "application/json", m.ContentType(wrapped{svc}))
	raw, err = m.Marshal(svc)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"x"}`, string(raw))
}

func TestPrefixesAndSemicolons(t *testing.T) {
	var gotPath, gotQuery string
	next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		gotPath, gotQuery = r.URL.Path, r.URL.Query().Get("filter")
	})
	h := stripVCFAPrefix(escapeSemicolons(next))
	cases := []struct{ url, path, filter string }{
		{"/v2/vcf-services?filter=vendor==broadcom;status==Healthy", "/v2/vcf-services", "vendor==broadcom;status==Healthy"},
		{"/api/extension/broadcom/service-manager/v2/vcf-services/x", "/v2/vcf-services/x", ""},
		{"/api/extension/broadcom/service-manager/other", "/api/extension/broadcom/service-manager/other", ""},
		{"/v2/vcf-services?filter=name%3D%3D*arcturus*", "/v2/vcf-services", "name==*arcturus*"},
	}
	for _, c := range cases {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, c.url, nil))
		require.Equal(t, c.path, gotPath, c.url)
		require.Equal(t, c.filter, gotQuery, c.url)
	}
}

// The JSON cache serves exactly what marshalling gives, for responses and
// for watch-stream chunks, and tells different contents apart.
func TestJSONCacheServesTheSameJSON(t *testing.T) {
	plain := &runtime.JSONPb{MarshalOptions: protojson.MarshalOptions{EmitDefaultValues: true}}
	m := &bodyMarshaler{Marshaler: plain}
	svc := &lifecyclev1.VcfService{Id: "x", Labels: map[string]string{"b": "2", "a": "1"}, Revision: 7}
	chunk := map[string]any{"result": &lifecyclev1.VcfService{Id: "x", Status: "Healthy"}}
	for _, v := range []any{svc, chunk, svc, chunk} {
		want, err := plain.Marshal(v)
		require.NoError(t, err)
		got, err := m.Marshal(v)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
	require.Len(t, m.cache.m, 2, "the second round was served from the cache")
	other := &lifecyclev1.VcfService{Id: "x", Labels: map[string]string{"b": "2", "a": "1"}, Revision: 8}
	got, err := m.Marshal(other)
	require.NoError(t, err)
	require.Contains(t, string(got), `"revision":"8"`, "another content is marshalled anew")
	appended := append(got, '\n')
	require.Len(t, appended, len(got)+1)
	again, err := m.Marshal(other)
	require.NoError(t, err)
	require.NotContains(t, string(again), "\n", "appending to a result leaves the cached JSON alone")
}
