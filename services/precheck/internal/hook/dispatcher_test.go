package hook

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	precheckv1 "github.com/vcfsm/vcfsm/gen/vcfservices/precheck/v1"
	"github.com/vcfsm/vcfsm/services/precheck/internal/testcerts"
)

// ann builds source annotations from suffix/value pairs.
func ann(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[AnnotationPrefix+kv[i]] = kv[i+1]
	}
	return m
}

// httpHook is a minimal plain-http hook declaration.
func httpHook(kv ...string) map[string]string {
	return ann(append([]string{"_service", testService, "_url", "check"}, kv...)...)
}

// httpsHook is an https hook declaration trusting testSecret.
func httpsHook(kv ...string) map[string]string {
	return ann(append([]string{
		"_service", testService, "_url", "ucs/v2/compatibility", "_port", "443",
		"_protocol", "https", "_ca_secret", testSecret,
	}, kv...)...)
}

func caSecret(key string, value []byte) map[string]*precheckv1.SecretData {
	return map[string]*precheckv1.SecretData{testSecret: {Data: map[string][]byte{key: value}}}
}

type sev struct{ severity, message string }

// TestDispatchTroubleshootingTable gives every row of seed 000's
// "Troubleshooting the Pre-check Hook" table, and every rule of the
// annotation and response contracts, its own outcome against real HTTP
// and HTTPS servers with real certificates.
func TestDispatchTroubleshootingTable(t *testing.T) {
	pki := testPKI(t)
	goodCA := caSecret(CACertKey, pki.ca.PEM)
	const data = "{\n  \"check\": \"storage-migration-ready\",\n  \"timeout\": \"60s\"\n}\n"

	type want struct {
		configured bool
		blocked    bool
		// failure is the exact failure, or its start when it ends in "…".
		failure  string
		contains []string
		status   int
		results  []sev
		endpoint string
		calls    int
		check    func(t *testing.T, reqs []recorded)
	}
	tests := []struct {
		name     string
		source   map[string]string
		noSource bool
		target   map[string]string
		noTarget bool
		ns       string // default testNS; "-" for none
		secrets  map[string]*precheckv1.SecretData
		// cert picks the server certificate; nil serves plain http.
		cert func(certs) *testcerts.Server
		// answer is the hook's handler; nil starts no server.
		answer http.HandlerFunc
		// resolve: "" maps the host to the server, "closed" to a port
		// nothing listens on, "dns" leaves it to a DNS that knows nothing.
		resolve  string
		timeout  time.Duration
		maxBytes int64
		want     want
	}{
		// Row: "endpoint unreachable" / DNS failure.
		{
			name: "unreachable: nothing listens at the resolved address", source: httpHook(), resolve: "closed",
			want: want{configured: true, blocked: true, failure: "endpoint unreachable: " + testHost + ":80 resolved to 127.0.0.1:…", contains: []string{"connection refused"}},
		},
		{
			name: "unreachable: DNS does not know the in-cluster name", source: httpHook("_port", "8080"), resolve: "dns",
			want: want{configured: true, blocked: true, failure: "endpoint unreachable: " + testHost + ":8080: DNS lookup failed: …", contains: []string{"no such host"}},
		},
		{
			name: "times out: the hook never answers", source: httpHook(), answer: hangAnswer, timeout: 300 * time.Millisecond,
			want: want{configured: true, blocked: true, failure: "endpoint timed out: http://" + testHost + ":80/check did not answer within 300ms", calls: 1},
		},
		// Row: TLS / certificate error when _protocol: https.
		{
			name: "TLS: the _ca_secret Secret is not in the namespace", source: httpsHook(), cert: func(c certs) *testcerts.Server { return c.good }, answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "TLS error: secret hook-ca in namespace svc-x not found…"},
		},
		{
			name: "TLS: the Secret has ca.cert, not ca.crt", source: httpsHook(), secrets: caSecret("ca.cert", pki.ca.PEM), cert: func(c certs) *testcerts.Server { return c.good }, answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "TLS error: secret hook-ca in namespace svc-x has no ca.crt key (the key must be ca.crt, not ca.cert; keys present: ca.cert)"},
		},
		{
			name: "TLS: ca.crt holds no PEM certificate", source: httpsHook(), secrets: caSecret(CACertKey, []byte("not a certificate")), cert: func(c certs) *testcerts.Server { return c.good }, answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "TLS error: the ca.crt key of secret hook-ca in namespace svc-x holds no PEM-encoded certificate"},
		},
		{
			name: "TLS: the server certificate comes from another CA", source: httpsHook(), secrets: goodCA, cert: func(c certs) *testcerts.Server { return c.otherCA }, answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "TLS error: the certificate presented by " + testHost + ":443 was not issued by the CA in the ca.crt key of secret hook-ca in namespace svc-x: …", contains: []string{"unknown authority"}},
		},
		{
			name: "TLS: the server certificate's SANs miss the in-cluster name", source: httpsHook(), secrets: goodCA, cert: func(c certs) *testcerts.Server { return c.wrongSAN }, answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "TLS error: the certificate presented by " + testHost + ":443 does not list " + testHost + " among its SANs: …", contains: []string{"other.svc-x.svc.cluster.local"}},
		},
		{
			name: "TLS: the hook serves plain http", source: httpsHook(), secrets: goodCA, answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "TLS error: " + testHost + ":443 did not answer with TLS (is the hook serving plain http?): …"},
		},
		{
			name: "TLS: the namespace's CA issued the certificate for the in-cluster name", source: httpsHook("_method", "POST"), target: ann("_data", data), secrets: goodCA,
			cert: func(c certs) *testcerts.Server { return c.good }, answer: jsonAnswer(`{"results":[{"severity":"INFO","message":"No breaking changes detected."}]}`),
			want: want{configured: true, status: 200, results: []sev{{"INFO", "No breaking changes detected."}}, endpoint: "https://" + testHost + ":443/ucs/v2/compatibility", calls: 1,
				check: func(t *testing.T, reqs []recorded) {
					require.Equal(t, "POST", reqs[0].method)
					require.Equal(t, "/ucs/v2/compatibility", reqs[0].path)
					require.Equal(t, testHost+":443", reqs[0].host)
					require.Equal(t, data, reqs[0].body) //nolint:testifylint // the body is sent verbatim, whitespace included: JSONEq would not check that
				}},
		},
		// Row: "method ... not supported".
		{
			name: "method PUT not supported", source: httpHook("_method", "PUT"), answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "method PUT not supported: only GET or POST (annotation " + AnnotationMethod + ")"},
		},
		{
			name: "method delete not supported, whatever its case", source: httpHook("_method", "delete"), answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "method delete not supported: only GET or POST…"},
		},
		{
			name: "method and protocol are case-insensitive", source: httpHook("_method", "pOsT", "_protocol", "HTTP"), answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, status: 200, endpoint: "http://" + testHost + ":80/check", calls: 1,
				check: func(t *testing.T, reqs []recorded) { require.Equal(t, "POST", reqs[0].method) }},
		},
		// Row: "CA cert must be provided if using HTTPS".
		{
			name: "CA cert must be provided if using HTTPS", source: httpHook("_protocol", "HTTPS"), secrets: goodCA, answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "CA cert must be provided if using HTTPS: …"},
		},
		{
			name: "protocol other than http or https", source: httpHook("_protocol", "grpc"), answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "protocol grpc not supported: only http or https…"},
		},
		// Row: "Invalid response body" / JSON parse error.
		{
			name: "Invalid response body: an HTML error page", source: httpHook(),
			answer: func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write([]byte("<html><body>Bad Gateway</body></html>"))
			},
			want: want{configured: true, blocked: true, status: 200, calls: 1, failure: "Invalid response body: not a JSON object: …", contains: []string{`"<html><body>Bad Gateway</body></html>"`}},
		},
		{
			name: "Invalid response body: no results array", source: httpHook(), answer: jsonAnswer(`{"items":[]}`),
			want: want{configured: true, blocked: true, status: 200, calls: 1, failure: `Invalid response body: missing the top-level "results" array`},
		},
		{
			name: "Invalid response body: results is not an array", source: httpHook(), answer: jsonAnswer(`{"results":{"severity":"ERROR"}}`),
			want: want{configured: true, blocked: true, status: 200, calls: 1, failure: `Invalid response body: "results" must be an array, got {"severity":"ERROR"}`},
		},
		{
			name: "Invalid response body: results is null", source: httpHook(), answer: jsonAnswer(`{"results":null}`),
			want: want{configured: true, blocked: true, status: 200, calls: 1, failure: `Invalid response body: "results" must be an array, got null`},
		},
		{
			name: "Invalid response body: an item without message", source: httpHook(), answer: jsonAnswer(`{"results":[{"severity":"INFO","message":"ok"},{"severity":"ERROR"}]}`),
			want: want{configured: true, blocked: true, status: 200, calls: 1, failure: "Invalid response body: results[1]: missing message"},
		},
		{
			name: "Invalid response body: an item without severity", source: httpHook(), answer: jsonAnswer(`{"results":[{"message":"m"}]}`),
			want: want{configured: true, blocked: true, status: 200, calls: 1, failure: "Invalid response body: results[0]: missing severity"},
		},
		{
			name: "Invalid response body: a severity that is not a string", source: httpHook(), answer: jsonAnswer(`{"results":[{"severity":3,"message":"m"}]}`),
			want: want{configured: true, blocked: true, status: 200, calls: 1, failure: "Invalid response body: results[0]: want an object with string fields severity and message…"},
		},
		{
			name: "Invalid response body: data after the object", source: httpHook(), answer: jsonAnswer(`{"results":[]} {"results":[]}`),
			want: want{configured: true, blocked: true, status: 200, calls: 1, failure: "Invalid response body: data after the JSON object…"},
		},
		{
			name: "Invalid response body: larger than the response limit", source: httpHook(), maxBytes: 64,
			answer: jsonAnswer(`{"results":[{"severity":"INFO","message":"` + strings.Repeat("x", 100) + `"}]}`),
			want:   want{configured: true, blocked: true, status: 200, calls: 1, failure: "Invalid response body: larger than 64 bytes"},
		},
		// Row: non-2xx HTTP status.
		{
			name: "non-200: the body is surfaced verbatim", source: httpHook(), answer: statusAnswer(http.StatusServiceUnavailable, "database migration in progress, retry in 5 minutes\n"),
			want: want{configured: true, blocked: true, status: 503, calls: 1, failure: "hook http://" + testHost + ":80/check answered HTTP 503 Service Unavailable: database migration in progress, retry in 5 minutes\n"},
		},
		{
			name: "non-200: 201 is not 200 even with a valid body", source: httpHook(), answer: statusAnswer(http.StatusCreated, `{"results":[]}`),
			want: want{configured: true, blocked: true, status: 201, calls: 1, failure: "hook http://" + testHost + ":80/check answered HTTP 201 Created: {\"results\":[]}"},
		},
		{
			name: "non-200: a long body is cut at the documented bound", source: httpHook(), answer: statusAnswer(http.StatusInternalServerError, strings.Repeat("E", ErrorBodyLimit)+"TAIL"),
			want: want{configured: true, blocked: true, status: 500, calls: 1,
				failure: "hook http://" + testHost + ":80/check answered HTTP 500 Internal Server Error: " + strings.Repeat("E", ErrorBodyLimit) + " … [truncated at 4096 bytes]"},
		},
		{
			name: "non-200: a redirect is not followed", source: httpHook(),
			answer: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://elsewhere.example.com/steal", http.StatusTemporaryRedirect)
			},
			want: want{configured: true, blocked: true, status: 307, calls: 1, failure: "hook http://" + testHost + ":80/check answered HTTP 307 Temporary Redirect (redirect to http://elsewhere.example.com/steal not followed): …"},
		},
		// Row: the endpoint considers the request unauthenticated.
		{
			name: "every call carries the bearer token and the JSON content type", source: httpHook(),
			answer: func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer "+testToken || r.Header.Get("Content-Type") != "application/json" {
					statusAnswer(http.StatusUnauthorized, "who are you?")(w, r)
					return
				}
				jsonAnswer(`{"results":[]}`)(w, r)
			},
			want: want{configured: true, status: 200, endpoint: "http://" + testHost + ":80/check", calls: 1},
		},
		{
			name: "a hook that rejects the caller blocks with its answer", source: httpHook(), answer: statusAnswer(http.StatusUnauthorized, "token not recognised by TokenReview"),
			want: want{configured: true, blocked: true, status: 401, calls: 1, failure: "hook http://" + testHost + ":80/check answered HTTP 401 Unauthorized: token not recognised by TokenReview"},
		},
		// Row: request body empty when the endpoint expected one.
		{
			name: "_data is read from the target, not the source: empty body", source: httpHook("_data", `{"from":"source"}`, "_method", "POST"), target: ann(),
			answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, status: 200, endpoint: "http://" + testHost + ":80/check", calls: 1, check: func(t *testing.T, reqs []recorded) {
				require.Empty(t, reqs[0].body)
				require.Equal(t, "application/json", reqs[0].contentType)
			}},
		},
		{
			name: "GET sends the target's _data verbatim too", source: httpHook(), target: ann("_data", data),
			answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, status: 200, endpoint: "http://" + testHost + ":80/check", calls: 1, check: func(t *testing.T, reqs []recorded) {
				require.Equal(t, "GET", reqs[0].method)
				require.Equal(t, data, reqs[0].body) //nolint:testifylint // the body is sent verbatim, whitespace included: JSONEq would not check that
			}},
		},
		// Row: upgrade blocked with a message you didn't expect.
		{
			name: "an ERROR result blocks with its message", source: httpHook(), answer: jsonAnswer(`{"results":[{"severity":"ERROR","message":"Migration prerequisite missing: backing PVC is not bound."}]}`),
			want: want{configured: true, blocked: true, status: 200, calls: 1, results: []sev{{"ERROR", "Migration prerequisite missing: backing PVC is not bound."}}},
		},
		{
			name: "WARNING and INFO inform; other severities are dropped; case-insensitive", source: httpHook(),
			answer: jsonAnswer(`{"results":[{"severity":"warning","message":"Custom resource X will be deprecated in the target version."},{"severity":"CRITICAL","message":"dropped"},{"severity":"Info","message":"No breaking changes detected."},{"severity":"","message":"dropped too"},{"severity":"eRRor","message":"blocks"}]}`),
			want: want{configured: true, blocked: true, status: 200, calls: 1, results: []sev{
				{"WARNING", "Custom resource X will be deprecated in the target version."}, {"INFO", "No breaking changes detected."}, {"ERROR", "blocks"},
			}},
		},
		{
			name: "WARNING alone does not block", source: httpHook(), answer: jsonAnswer(`{"results":[{"severity":"WARNING","message":"heads up"}],"extra":true}`),
			want: want{configured: true, status: 200, calls: 1, results: []sev{{"WARNING", "heads up"}}},
		},
		{
			name: "empty results are compatible", source: httpHook(), answer: jsonAnswer(`{ "results": [] }`),
			want: want{configured: true, status: 200, calls: 1, endpoint: "http://" + testHost + ":80/check"},
		},
		// Row: pre-check fails before the endpoint is ever called.
		{
			name: "preflight: the source Package is missing", noSource: true, answer: jsonAnswer(`{"results":[]}`),
			want: want{blocked: true, failure: "pre-check failed before calling the hook: the source version's Package (1.0.0) could not be loaded: the Package YAML is empty"},
		},
		{
			name: "preflight: the target Package is missing", source: httpHook(), noTarget: true, answer: jsonAnswer(`{"results":[]}`),
			want: want{blocked: true, failure: "pre-check failed before calling the hook: the target version's Package (2.0.0) could not be loaded: the Package YAML is empty"},
		},
		{
			name: "preflight: the namespace is unknown", source: httpHook(), ns: "-", answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "pre-check failed before calling the hook: the service's namespace could not be resolved: …"},
		},
		{
			name: "preflight: the namespace is not a namespace name", source: httpHook(), ns: "Svc_X", answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "pre-check failed before calling the hook: the service's namespace \"Svc_X\" is not a valid Kubernetes namespace name"},
		},
		// Annotation rules.
		{
			name: "no hook annotations: not configured, not blocked, no call", source: ann(), answer: jsonAnswer(`{"results":[]}`),
			want: want{},
		},
		{
			name: "_service is required", source: ann("_url", "check"), answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "annotation " + AnnotationService + " is required…"},
		},
		{
			name: "_url is required", source: ann("_service", testService), answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "annotation " + AnnotationURL + " is required…"},
		},
		{
			name: "_url must not start with a slash", source: ann("_service", testService, "_url", "/check"), answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "annotation " + AnnotationURL + `: "/check" must not start with '/'…`},
		},
		{
			name: "_port must be a TCP port", source: httpHook("_port", "http"), answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, blocked: true, failure: "annotation " + AnnotationPort + `: "http" is not a TCP port (1-65535)`},
		},
		{
			name: "defaults: port 80, http, GET", source: httpHook(), answer: jsonAnswer(`{"results":[]}`),
			want: want{configured: true, status: 200, endpoint: "http://" + testHost + ":80/check", calls: 1, check: func(t *testing.T, reqs []recorded) {
				require.Equal(t, "GET", reqs[0].method)
				require.Equal(t, "/check", reqs[0].path)
				require.Equal(t, testHost+":80", reqs[0].host)
			}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var srv *hookServer
			var entries []string
			if tc.answer != nil {
				var cert *testcerts.Server
				if tc.cert != nil {
					cert = tc.cert(pki)
				}
				srv = startHook(t, cert, tc.answer)
			}
			var dns *net.Resolver
			switch tc.resolve {
			case "":
				if srv != nil {
					entries = append(entries, testHost+"="+srv.addr())
				}
			case "closed":
				entries = append(entries, testHost+"="+closedAddr(t))
			case "dns":
				dns = nxdomainResolver(t)
			}
			resolver, err := NewResolver(entries, dns)
			require.NoError(t, err)
			d, err := NewDispatcher(Options{Token: testToken, Resolver: resolver, Timeout: tc.timeout, MaxResponseBytes: tc.maxBytes})
			require.NoError(t, err)

			req := &precheckv1.DispatchHookRequest{
				Namespace: testNS, Secrets: tc.secrets, ServiceName: "myservice", Supervisor: "supervisor-vc1",
				SourceVersion: "1.0.0", TargetVersion: "2.0.0",
			}
			if !tc.noSource {
				req.SourcePackageYaml = packageYAML(t, tc.source)
			}
			if !tc.noTarget {
				req.TargetPackageYaml = packageYAML(t, tc.target)
			}
			switch tc.ns {
			case "-":
				req.Namespace = ""
			case "":
			default:
				req.Namespace = tc.ns
			}

			res := d.Dispatch(context.Background(), req)

			require.Equal(t, tc.want.configured, res.GetConfigured(), "configured")
			require.Equal(t, tc.want.blocked, res.GetBlocked(), "blocked; failure: %s", res.GetFailure())
			if prefix, ok := strings.CutSuffix(tc.want.failure, "…"); ok {
				require.True(t, strings.HasPrefix(res.GetFailure(), prefix), "failure %q should start with %q", res.GetFailure(), prefix)
			} else {
				require.Equal(t, tc.want.failure, res.GetFailure())
			}
			for _, c := range tc.want.contains {
				require.Contains(t, res.GetFailure(), c)
			}
			require.Equal(t, int32(tc.want.status), res.GetHttpStatus(), "http status")
			require.Equal(t, "supervisor-vc1", res.GetSupervisor())
			if tc.want.endpoint != "" {
				require.Equal(t, tc.want.endpoint, res.GetEndpoint())
			}
			var got []sev
			for _, r := range res.GetResults() {
				got = append(got, sev{r.GetSeverity(), r.GetMessage()})
				require.Equal(t, KindHook, r.GetKind())
				require.Equal(t, "supervisor-vc1", r.GetSubject())
				require.Equal(t, "2.0.0", r.GetCheckedVersion())
				require.Equal(t, res.GetEndpoint(), r.GetSource())
			}
			require.Equal(t, tc.want.results, got, "results")
			if srv != nil {
				reqs := srv.requests()
				require.Len(t, reqs, tc.want.calls, "calls that reached the hook")
				if tc.want.check != nil {
					tc.want.check(t, reqs)
				}
			}
		})
	}
}
