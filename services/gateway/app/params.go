package app

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/vcfsm/vcfsm/platform/echo"
)

// restNames is the one table from a request message's field (its proto
// name, which grpc-gateway reports in query-parameter errors) to the REST
// query parameter api.md names. Every query parameter of api.md is here.
var restNames = map[string]string{
	"page":         "page",
	"page_size":    "pageSize",
	"filter":       "filter",
	"sort_asc":     "sortAsc",
	"sort_desc":    "sortDesc",
	"metadata":     "metadata",
	"package":      "package",
	"state":        "state",
	"inventory":    "inventory",
	"signatures":   "signatures",
	"force_delete": "forceDelete",
	"expanded":     "expanded",
	"until":        "until",
}

// restName names a field as REST callers write it; fields outside the
// table get protojson's lowerCamelCase, which is what the gateway accepts.
func restName(field string) string {
	if n, ok := restNames[field]; ok {
		return n
	}
	parts := strings.Split(field, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

var (
	parsingField = regexp.MustCompile(`^parsing field "([A-Za-z0-9_.]+)": (.*)$`)
	tooMany      = regexp.MustCompile(`^too many values for field "([A-Za-z0-9_.]+)": (.*)$`)
	strconvErr   = regexp.MustCompile(`^strconv\.Parse(Int|Uint|Bool|Float): parsing "(.*)": (.*)$`)
)

// restQueryError rewrites grpc-gateway's query-parameter errors, which
// name the protobuf field ("parsing field \"page_size\": strconv…"), into
// one sentence naming the REST parameter. Other errors pass unchanged.
func restQueryError(err error) error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.InvalidArgument {
		return err
	}
	msg := st.Message()
	if m := tooMany.FindStringSubmatch(msg); m != nil {
		return status.Errorf(codes.InvalidArgument, "query parameter %s is given more than once (%s): give it once", restName(m[1]), echo.Cut(m[2], echo.MaxValue))
	}
	m := parsingField.FindStringSubmatch(msg)
	if m == nil {
		return err
	}
	name, cause := restName(m[1]), m[2]
	if c := strconvErr.FindStringSubmatch(cause); c != nil {
		kind, value, why := c[1], c[2], c[3]
		switch {
		case kind == "Bool":
			return status.Errorf(codes.InvalidArgument, "query parameter %s: %s is not a boolean: use true or false", name, echo.Quote(value))
		case why == "value out of range" && len(value) > echo.MaxValue:
			return status.Errorf(codes.InvalidArgument, "query parameter %s: a number of %d digits is out of range", name, len(value))
		case why == "value out of range":
			return status.Errorf(codes.InvalidArgument, "query parameter %s: %s is out of range", name, value)
		default:
			return status.Errorf(codes.InvalidArgument, "query parameter %s: %s is not a number", name, echo.Quote(value))
		}
	}
	return status.Errorf(codes.InvalidArgument, "query parameter %s: %s", name, cause)
}

// checkPaging refuses page numbers below 1 on the service list (api.md:
// page is 1-indexed, minimum 1). Protobuf cannot tell page=0 from no page,
// so the REST edge, which sees the query, checks it; lifecycle treats an
// absent page as 1.
func checkPaging(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == "/v2/vcf-services" {
			for _, v := range r.URL.Query()["page"] {
				if n, err := strconv.ParseInt(v, 10, 32); err == nil && n < 1 {
					writeError(w, http.StatusBadRequest, codes.InvalidArgument,
						fmt.Sprintf("query parameter page: %d is not a page: pages start at 1", n))
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
