package app

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/health/grpc_health_v1"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/observability"
)

// route serves h on mux at pattern ("GET /healthz"), naming the route for
// the metrics and the access log.
func route(mux *http.ServeMux, pattern string, h http.Handler) {
	_, path, _ := strings.Cut(pattern, " ")
	mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		observability.SetRoute(r.Context(), path)
		h.ServeHTTP(w, r)
	}))
}

// recordCall names the matched route (grpc-gateway's pattern string,
// e.g. /v2/vcf-services/{id}, never the path) for the metrics and the
// access log. grpc-gateway calls it with its annotated context, when it
// answers or fails.
func recordCall(ctx context.Context) {
	if p, ok := runtime.HTTPPathPattern(ctx); ok {
		observability.SetRoute(ctx, p)
	}
}

// serveHealthz is liveness: the gateway process answers. Whether it can
// serve requests is /readyz.
func serveHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"status":"SERVING"}` + "\n"))
}

// readyz is readiness: 200 when the lifecycle service reports SERVING
// (which it does only while its store answers and its peers are
// SERVING), 503 otherwise, with the status seen.
func readyz(health grpc_health_v1.HealthClient) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		status, detail := "SERVING", ""
		resp, err := health.Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: lifecyclev1.LifecycleService_ServiceDesc.ServiceName})
		switch {
		case err != nil:
			status, detail = "NOT_SERVING", "lifecycle service unreachable: "+err.Error()
		case resp.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING:
			status, detail = "NOT_SERVING", "lifecycle service is "+resp.GetStatus().String()+" (its store or a peer it needs is down; its log says which)"
		}
		w.Header().Set("Content-Type", "application/json")
		if status != "SERVING" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"status": status, "lifecycle": status, "detail": detail})
	})
}
