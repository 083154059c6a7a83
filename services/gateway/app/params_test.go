package app

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/grpc-ecosystem/grpc-gateway/v2/utilities"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
)

// Every query parameter of api.md, given a bad value through grpc-gateway's
// own parser, is named as REST callers write it (issue 16 §4).
func TestQueryParameterErrorsUseRESTNames(t *testing.T) {
	list := func() proto.Message { return &lifecyclev1.ListServicesRequest{} }
	get := func() proto.Message { return &lifecyclev1.GetServiceRequest{} }
	cases := []struct {
		msg   func() proto.Message
		query string
		want  string
	}{
		{list, "page=x", `query parameter page: "x" is not a number`},
		{list, "pageSize=abc", `query parameter pageSize: "abc" is not a number`},
		{list, "page_size=abc", `query parameter pageSize: "abc" is not a number`},
		{list, "page=99999999999", `query parameter page: 99999999999 is out of range`},
		{list, "filter=a&filter=b", `query parameter filter is given more than once (a, b): give it once`},
		{list, "sortAsc=a&sortAsc=b", `query parameter sortAsc is given more than once (a, b): give it once`},
		{list, "sortDesc=a&sortDesc=b", `query parameter sortDesc is given more than once (a, b): give it once`},
		{list, "metadata=maybe", `query parameter metadata: "maybe" is not a boolean: use true or false`},
		{list, "package=2", `query parameter package: "2" is not a boolean: use true or false`},
		{list, "state=yes", `query parameter state: "yes" is not a boolean: use true or false`},
		{list, "inventory=no", `query parameter inventory: "no" is not a boolean: use true or false`},
		{get, "signatures=on", `query parameter signatures: "on" is not a boolean: use true or false`},
		{func() proto.Message { return &lifecyclev1.DeleteServiceRequest{} }, "forceDelete=yes", `query parameter forceDelete: "yes" is not a boolean: use true or false`},
		{func() proto.Message { return &lifecyclev1.RenderEffectiveValuesRequest{} }, "expanded=y", `query parameter expanded: "y" is not a boolean: use true or false`},
		// Over-long values are cut and measured, not echoed (issue 25 §8).
		{list, "page=" + strings.Repeat("x", 5000), `query parameter page: "` + strings.Repeat("x", 224) + `"… (5000 bytes) is not a number`},
		{list, "page=" + strings.Repeat("9", 5000), `query parameter page: a number of 5000 digits is out of range`},
		{list, "sortAsc=" + strings.Repeat("s", 5000) + "&sortAsc=b", `query parameter sortAsc is given more than once (` + strings.Repeat("s", 256) + `… (message cut: 5003 bytes)): give it once`},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			v, err := url.ParseQuery(c.query)
			require.NoError(t, err)
			perr := runtime.PopulateQueryParameters(c.msg(), v, utilities.NewDoubleArray(nil))
			require.Error(t, perr)
			// The generated handlers wrap the parser's error like this.
			got := restQueryError(status.Errorf(codes.InvalidArgument, "%v", perr))
			require.Equal(t, codes.InvalidArgument, status.Code(got))
			require.Equal(t, c.want, status.Convert(got).Message())
		})
	}
	for _, rest := range []string{"page", "pageSize", "filter", "sortAsc", "sortDesc", "metadata", "package", "state", "inventory", "signatures", "forceDelete", "expanded"} {
		found := false
		for _, n := range restNames {
			found = found || n == rest
		}
		require.True(t, found, "api.md's %s is in the table", rest)
	}
	other := status.Error(codes.InvalidArgument, "pageSize 300: want 0 to 128")
	require.Equal(t, other, restQueryError(other), "other errors pass unchanged")
}

func TestPageZeroIsRefused(t *testing.T) {
	reached := false
	h := checkPaging(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	for _, q := range []string{"page=0", "page=-2", "pageSize=5&page=0"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v2/vcf-services?"+q, nil))
		require.Equal(t, http.StatusBadRequest, rec.Code, q)
		require.Contains(t, rec.Body.String(), "query parameter page:", q)
		require.False(t, reached, q)
	}
	for _, q := range []string{"page=1", "", "page=x"} {
		reached = false
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v2/vcf-services?"+q, nil))
		require.True(t, reached, "%q goes on", q)
	}
}
