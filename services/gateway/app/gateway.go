// Package app is the REST gateway: grpc-gateway in front of the lifecycle
// service, registered against a client connection so every REST call passes
// through the same gRPC interceptors (auth, validation, error table) as a
// direct gRPC call.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"google.golang.org/grpc/health/grpc_health_v1"

	commonv1 "github.com/vcfsm/vcfsm/gen/vcfservices/common/v1"
	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/platform/echo"
	"github.com/vcfsm/vcfsm/platform/grpcx"
	"github.com/vcfsm/vcfsm/platform/observability"
	"github.com/vcfsm/vcfsm/services/gateway/internal/console"
)

// Read-your-writes across lifecycle replicas (grpcx.RevisionHeader): every
// answer says the store revision it reflects; a request that sends it back
// is answered no older than that revision, by whichever replica.
const (
	restRevisionHeader    = "X-Vcfsm-Revision"
	restMinRevisionHeader = "X-Vcfsm-Min-Revision"
)

// VCFAPrefix is the base path VCF Automation serves the API under; the same
// routes answer there and under /v2.
const VCFAPrefix = "/api/extension/broadcom/service-manager"

// IdentityHeader is on every answer of the gateway, errors included: the
// version of the REST API it serves. Clients (vcfctl) tell by it that
// they talk to a Service Manager and not some other server.
const (
	IdentityHeader = "X-Vcfsm-Api-Version"
	APIVersion     = "2.0.0"
)

// Options configure New.
type Options struct {
	Logger *slog.Logger
	// Tokens authenticate callers at the edge, before a body is read; the
	// caller's token is still forwarded to lifecycle, which checks it again
	// with the method's permission.
	Tokens *auth.Tokens
	// Limits bound callers; zero fields take the defaults.
	Limits Limits
	// Telemetry adds the request id, tracing, metrics and the access log
	// (nil: a private registry nobody serves, no tracing).
	Telemetry *observability.Telemetry
}

// New returns the gateway's HTTP handler over a connection to lifecycle.
func New(ctx context.Context, conn *grpc.ClientConn, opts Options) (http.Handler, error) {
	if opts.Tokens == nil {
		return nil, errors.New("gateway: no tokens: the REST edge authenticates every caller")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	limits := opts.Limits.withDefaults()
	tel := observability.Or(opts.Telemetry)
	jsonMarshaler := &runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{EmitDefaultValues: true},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}
	marshaler := &bodyMarshaler{Marshaler: jsonMarshaler}
	mux := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, marshaler),
		runtime.WithForwardResponseOption(setHTTPCode),
		// Of lifecycle's response metadata only the revision is for REST
		// callers; the rest (content-type: application/grpc, the status a
		// handler chose) is the transport's.
		runtime.WithOutgoingHeaderMatcher(func(key string) (string, bool) {
			if key == grpcx.RevisionHeader {
				return restRevisionHeader, true
			}
			return "", false
		}),
		runtime.WithIncomingHeaderMatcher(func(key string) (string, bool) {
			if http.CanonicalHeaderKey(key) == restMinRevisionHeader {
				return grpcx.MinRevisionHeader, true
			}
			return runtime.DefaultHeaderMatcher(key)
		}),
		runtime.WithErrorHandler(errorHandler(log, limits.MaxBodyBytes)),
	)
	views := newSharedViews()
	marshaler.views = views
	client := viewClient{LifecycleServiceClient: lifecyclev1.NewLifecycleServiceClient(conn), views: views}
	if err := lifecyclev1.RegisterLifecycleServiceHandlerClient(ctx, mux, client); err != nil {
		return nil, fmt.Errorf("register lifecycle routes: %w", err)
	}
	if err := lifecyclev1.RegisterRolloutServiceHandlerClient(ctx, mux, lifecyclev1.NewRolloutServiceClient(conn)); err != nil {
		return nil, fmt.Errorf("register rollout routes: %w", err)
	}
	root := http.NewServeMux()
	route(root, "GET /v2/openapi.json", http.HandlerFunc(serveOpenAPI))
	route(root, "GET "+VCFAPrefix+"/v2/openapi.json", http.HandlerFunc(serveOpenAPI))
	route(root, "GET /healthz", http.HandlerFunc(serveHealthz))
	route(root, "GET /readyz", readyz(grpc_health_v1.NewHealthClient(conn)))
	// The web console: its files, and the two calls of its own; for
	// everything else it is a REST client of /v2 like any other.
	ui, err := console.New(console.Options{Tokens: opts.Tokens, Lifecycle: lifecyclev1.NewLifecycleServiceClient(conn), Logger: log})
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	route(root, "GET "+console.Prefix, ui)
	route(root, "GET "+console.IdentityPath, ui)
	route(root, "GET "+console.WatchPath, ui)
	root.Handle("GET /ui", http.RedirectHandler(console.Prefix, http.StatusMovedPermanently))
	// The lifecycle routes are named by recordCall when grpc-gateway
	// answers; the request id reaches lifecycle through the connection's
	// interceptors (observability.DialOptions).
	root.Handle("/", stripVCFAPrefix(escapeSemicolons(checkPaging(mux))))
	// Telemetry wraps the guard so refused requests are logged and counted
	// too; the guard refuses before any body is read.
	return identify(tel.HTTPHandler(newGuard(root, opts.Tokens, limits, log), log)), nil
}

// identify puts IdentityHeader on every answer.
func identify(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(IdentityHeader, APIVersion)
		next.ServeHTTP(w, r)
	})
}

func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(lifecyclev1.OpenAPIJSON)
}

// stripVCFAPrefix serves /api/extension/broadcom/service-manager/v2/… as /v2/….
func stripVCFAPrefix(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, VCFAPrefix); ok && strings.HasPrefix(rest, "/v2") {
			r2 := r.Clone(r.Context())
			r2.URL.Path = rest
			r2.URL.RawPath = ""
			next.ServeHTTP(w, r2)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// escapeSemicolons keeps FIQL's ";" (AND) in query values: api.md's
// filters are written unencoded (filter=vendor==broadcom;status==Healthy),
// and Go's query parser would reject the raw semicolon. No parameter of
// the API uses ";" as a separator, so it always belongs to a value.
func escapeSemicolons(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.RawQuery, ";") {
			r2 := r.Clone(r.Context())
			r2.URL.RawQuery = strings.ReplaceAll(r.URL.RawQuery, ";", "%3B")
			next.ServeHTTP(w, r2)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// setHTTPCode applies the status a handler chose through grpcx.HTTPCodeHeader.
func setHTTPCode(ctx context.Context, w http.ResponseWriter, _ proto.Message) error {
	recordCall(ctx)
	md, ok := runtime.ServerMetadataFromContext(ctx)
	if !ok {
		return nil
	}
	vals := md.HeaderMD.Get(grpcx.HTTPCodeHeader)
	if len(vals) == 0 {
		return nil
	}
	code, err := strconv.Atoi(vals[0])
	if err != nil || code < 200 || code > 299 {
		return nil
	}
	w.WriteHeader(code)
	return nil
}

func errorHandler(log *slog.Logger, maxBody int64) runtime.ErrorHandlerFunc {
	return func(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
		if bodyLimitHit(r) {
			writeError(w, http.StatusRequestEntityTooLarge, codes.InvalidArgument, bodyTooLarge(maxBody))
			return
		}
		switch runtime.HTTPStatusFromCode(statusCode(err)) {
		case http.StatusUnauthorized:
			w.Header().Set("WWW-Authenticate", `Bearer realm="vcf-service-manager"`)
		case http.StatusTooManyRequests:
			// A busy peer (the renderer's queue) asks to come back soon.
			w.Header().Set("Retry-After", "1")
		}
		recordCall(ctx)
		log.DebugContext(ctx, "request failed", "method", echo.Cut(r.Method, 32), "path", echo.Cut(r.URL.Path, echo.MaxValue), "error", err)
		runtime.DefaultHTTPErrorHandler(ctx, mux, m, w, r, restQueryError(err))
	}
}

// bodyMarshaler serves YamlDocument responses verbatim with their content
// type and everything else as JSON, through the JSON cache.
type bodyMarshaler struct {
	runtime.Marshaler
	cache jsonCache
	// views: GET answers decoded once and shared; their JSON is kept
	// with them, found by the view itself (no key to compute).
	views *sharedViews
}

type responseBody interface {
	XXX_ResponseBody() interface{}
}

func document(v any) (*commonv1.YamlDocument, bool) {
	if rb, ok := v.(responseBody); ok {
		v = rb.XXX_ResponseBody()
	}
	d, ok := v.(*commonv1.YamlDocument)
	return d, ok
}

// ContentType implements runtime.Marshaler.
func (m *bodyMarshaler) ContentType(v any) string {
	if d, ok := document(v); ok {
		if d.GetContentType() != "" {
			return d.GetContentType()
		}
		return "application/yaml"
	}
	return m.Marshaler.ContentType(v)
}

// Marshal implements runtime.Marshaler.
func (m *bodyMarshaler) Marshal(v any) ([]byte, error) {
	if d, ok := v.(*commonv1.YamlDocument); ok {
		return d.GetData(), nil
	}
	if view, ok := v.(*lifecyclev1.VcfService); ok && m.views != nil {
		if out, shared := m.views.jsonOf(view); shared {
			if out != nil {
				return out, nil
			}
			out, err := m.cache.marshal(v, m.Marshaler.Marshal)
			if err == nil {
				m.views.keepJSON(view, out)
			}
			return out, err
		}
	}
	return m.cache.marshal(v, m.Marshaler.Marshal)
}
