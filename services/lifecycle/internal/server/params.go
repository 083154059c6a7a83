package server

import (
	"context"
	"time"

	"google.golang.org/grpc"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/echo"
)

// The request parameters error messages repeat: ids, sort fields, status
// and state names, versions. Each is short by nature; one longer than
// echo.MaxValue is refused here, named and measured, before the domain
// quotes it (an over-long sortAsc over gRPC came back whole in the error,
// 15 MB of it). Values, overlays and filters are bounded elsewhere (the
// FIQL parser, the domain's own checks) and are not listed.
type param struct {
	name string
	get  func(req any) (string, bool)
}

func getter[T any](get func(T) string) func(any) (string, bool) {
	return func(req any) (string, bool) {
		r, ok := req.(T)
		if !ok {
			return "", false
		}
		return get(r), true
	}
}

type (
	hasID                      interface{ GetId() string }
	hasSortAsc                 interface{ GetSortAsc() string }
	hasSortDesc                interface{ GetSortDesc() string }
	hasUntil                   interface{ GetUntil() string }
	hasTargetVersion           interface{ GetTargetVersion() string }
	hasTargetKubernetesVersion interface{ GetTargetKubernetesVersion() string }
	hasSupervisor              interface{ GetSupervisor() string }
	hasName                    interface{ GetName() string }
)

var echoedParams = []param{
	{"id", getter(hasID.GetId)},
	{"sortAsc", getter(hasSortAsc.GetSortAsc)},
	{"sortDesc", getter(hasSortDesc.GetSortDesc)},
	{"until", getter(hasUntil.GetUntil)},
	{"targetVersion", getter(hasTargetVersion.GetTargetVersion)},
	{"targetKubernetesVersion", getter(hasTargetKubernetesVersion.GetTargetKubernetesVersion)},
	{"supervisor", getter(hasSupervisor.GetSupervisor)},
	{"name", getter(hasName.GetName)},
	{"lifecycleState", getter(func(r *lifecyclev1.UpdateServiceRequest) string { return r.GetService().GetLifecycleState() })},
	{"lifecycleState", getter(func(r *lifecyclev1.PatchServiceRequest) string { return r.GetService().GetLifecycleState() })},
	{"phase", getter(func(r *lifecyclev1.PatchServiceRequest) string { return r.GetService().GetPhase() })},
}

// checkParams refuses a request whose echoed parameter is longer than
// echo.MaxValue, naming it and its length, never its value.
func checkParams(req any) error {
	for _, p := range echoedParams {
		if v, ok := p.get(req); ok && len(v) > echo.MaxValue {
			return invalid("%s: %d bytes long, more than the %d a %s can be", p.name, len(v), echo.MaxValue, p.name)
		}
	}
	return nil
}

// Interceptor is the lifecycle service's unary interceptor (install it
// with grpcx.Server.InterceptUnary): over-long parameters are refused
// (checkParams), then Revisions runs the call, whose answer a caller who
// may not see secrets gets with them hidden (redact.go).
func (h *Handler) Interceptor(wait time.Duration) grpc.UnaryServerInterceptor {
	revisions := h.Revisions(wait)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := checkParams(req); err != nil {
			return nil, err
		}
		if !canSeeSecrets(ctx) {
			// Run the handler, then hide the secrets of its answer.
			next := handler
			handler = func(ctx context.Context, req any) (any, error) {
				resp, err := next(ctx, req)
				if err != nil {
					return resp, err
				}
				return h.hideAnswer(ctx, req, resp), nil
			}
		}
		return revisions(ctx, req, info, handler)
	}
}
