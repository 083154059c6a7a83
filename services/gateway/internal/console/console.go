package console

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"google.golang.org/grpc/codes"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
)

// Paths of the console's own calls (everything else it asks is /v2).
const (
	IdentityPath = Prefix + "api/identity"
	WatchPath    = Prefix + "api/watch"
)

// Options configure New.
type Options struct {
	// Tokens name the caller of the identity call; the gateway's guard
	// has already refused callers without a valid token.
	Tokens *auth.Tokens
	// Lifecycle answers the watch fan-in, called with the caller's token.
	Lifecycle lifecyclev1.LifecycleServiceClient
	Logger    *slog.Logger
}

// New returns the handler of everything under Prefix.
func New(opts Options) (http.Handler, error) {
	if opts.Tokens == nil || opts.Lifecycle == nil {
		return nil, errors.New("console: tokens and a lifecycle client are required")
	}
	byPath, err := assets()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix, files{byPath: byPath})
	mux.Handle("GET "+IdentityPath, identity{tokens: opts.Tokens})
	mux.Handle("GET "+WatchPath, watchFanIn{lifecycle: opts.Lifecycle, log: log})
	return mux, nil
}

// Public reports the console requests that need no token: its files
// (they hold no data). Its two calls need one, like /v2.
func Public(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) &&
		strings.HasPrefix(r.URL.Path, Prefix) && !strings.HasPrefix(r.URL.Path, Prefix+"api/")
}

// IsWatch reports the console's watch fan-in, a long-lived stream.
func IsWatch(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == WatchPath
}

// Identity is what the console learns about its caller at sign-in: who,
// with which role, and what that role may do, so it shows only the
// controls the caller may use. The server still decides every call.
type Identity struct {
	Principal   string   `json:"principal"`
	Role        string   `json:"role"`
	Permissions []string `json:"permissions"`
}

// consolePermissions are the permissions the console's controls need
// (admin: approving and aborting rollouts, clearing a quarantine).
var consolePermissions = []auth.Permission{auth.PermRead, auth.PermWrite, auth.PermInventoryWrite, auth.PermAdmin}

type identity struct {
	tokens *auth.Tokens
}

func (h identity) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header(), r.TLS != nil)
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	id, ok := h.tokens.Lookup(strings.TrimSpace(token))
	if !ok || !strings.EqualFold(scheme, "bearer") {
		writeJSONError(w, http.StatusUnauthorized, codes.Unauthenticated, "missing or invalid bearer token: send Authorization: Bearer <token>")
		return
	}
	out := Identity{Principal: id.Principal, Role: string(id.Role), Permissions: []string{}}
	for _, p := range consolePermissions {
		if id.Role.Has(p) {
			out.Permissions = append(out.Permissions, string(p))
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(out)
}

// writeJSONError answers in the REST error shape (google.rpc.Status).
func writeJSONError(w http.ResponseWriter, httpStatus int, code codes.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": int(code), "message": msg, "details": []any{}})
}
