package vcfsm_test

import (
	"net/http"

	"sort"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/stretchr/testify/require"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/platform/auth"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// routeTable is every REST route with the permission it needs; SECURITY.md
// shows the same table by role.
var routeTable = []struct {
	method, path, rpc string
	perm              auth.Permission
}{
	{http.MethodPost, "/v2/vcf-services", "CreateService", auth.PermWrite},
	{http.MethodGet, "/v2/vcf-services", "ListServices", auth.PermRead},
	{http.MethodGet, "/v2/vcf-services/{id}", "GetService", auth.PermRead},
	{http.MethodPut, "/v2/vcf-services/{id}", "UpdateService", auth.PermWrite},
	{http.MethodPatch, "/v2/vcf-services/{id}", "PatchService", auth.PermWrite},
	{http.MethodDelete, "/v2/vcf-services/{id}", "DeleteService", auth.PermWrite},
	{http.MethodGet, "/v2/vcf-services/{id}/state", "GetServiceState", auth.PermRead},
	{http.MethodGet, "/v2/vcf-services/{id}/inventory", "GetServiceInventory", auth.PermRead},
	{http.MethodGet, "/v2/vcf-services/{id}/metadata", "GetServiceMetadata", auth.PermRead},
	{http.MethodGet, "/v2/vcf-services/{id}/package", "GetServicePackage", auth.PermRead},
	{http.MethodPost, "/v2/vcf-services/{id}/render-effective-values", "RenderEffectiveValues", auth.PermRead},
	{http.MethodPost, "/v2/vcf-services/{id}/render-value-provenance", "RenderValueProvenance", auth.PermRead},
	{http.MethodPost, "/v2/vcf-services/{id}/render-resources", "RenderResources", auth.PermRead},
	{http.MethodPost, "/v2/vcf-services/{id}/render-access-grants", "RenderAccessGrants", auth.PermRead},
	{http.MethodPost, "/v2/vcf-services/{id}/rollback", "RollbackService", auth.PermWrite},
	{http.MethodPost, "/v2/vcf-services/{id}/upgrade-plan", "PreviewUpgrade", auth.PermRead},
	{http.MethodGet, "/v2/vcf-services/{id}/history", "ListServiceHistory", auth.PermRead},
	{http.MethodGet, "/v2/vcf-services/{id}/watch", "WatchService", auth.PermRead},
	{http.MethodPost, "/v2/vcf-service-versions", "RegisterServiceVersion", auth.PermWrite},
	{http.MethodGet, "/v2/vcf-service-versions", "ListServiceVersions", auth.PermRead},
	{http.MethodGet, "/v2/inventory", "GetPlatformInventory", auth.PermRead},
	{http.MethodPut, "/v2/inventory", "PutPlatformInventory", auth.PermInventoryWrite},
	{http.MethodPost, "/v2/supervisors/{supervisor}/upgrade-check", "CheckSupervisorUpgrade", auth.PermRead},
	{http.MethodGet, "/v2/vcf-services/{id}/rollout", "RolloutService/GetRollout", auth.PermRead},
	{http.MethodPost, "/v2/vcf-services/{id}/rollout/approve", "RolloutService/ApproveRollout", auth.PermAdmin},
	{http.MethodPost, "/v2/vcf-services/{id}/rollout/pause", "RolloutService/PauseRollout", auth.PermWrite},
	{http.MethodPost, "/v2/vcf-services/{id}/rollout/resume", "RolloutService/ResumeRollout", auth.PermWrite},
	{http.MethodPost, "/v2/vcf-services/{id}/rollout/abort", "RolloutService/AbortRollout", auth.PermAdmin},
	{http.MethodPost, "/v2/vcf-service-versions/{name}/{version}/quarantine", "RolloutService/QuarantineVersion", auth.PermAdmin},
	{http.MethodDelete, "/v2/vcf-service-versions/{name}/{version}/quarantine", "RolloutService/ClearQuarantine", auth.PermAdmin},
	{http.MethodGet, "/v2/rollout-strategies", "RolloutService/GetRolloutStrategies", auth.PermRead},
	{http.MethodPut, "/v2/rollout-strategies", "RolloutService/PutRolloutStrategies", auth.PermAdmin},
}

// fullMethod is a route's gRPC method: LifecycleService's unless it names
// its service.
func fullMethod(rpc string) string {
	if strings.Contains(rpc, "/") {
		return "/vcfservices.lifecycle.v1." + rpc
	}
	return "/vcfservices.lifecycle.v1.LifecycleService/" + rpc
}

// The table covers every RPC of the lifecycle service, and the policy in
// platform/auth agrees with it.
func TestRouteTableCoversEveryRPC(t *testing.T) {
	var rpcs, listed []string
	for _, desc := range []grpc.ServiceDesc{lifecyclev1.LifecycleService_ServiceDesc, lifecyclev1.RolloutService_ServiceDesc} {
		for _, m := range desc.Methods {
			rpcs = append(rpcs, "/"+desc.ServiceName+"/"+m.MethodName)
		}
		for _, s := range desc.Streams {
			rpcs = append(rpcs, "/"+desc.ServiceName+"/"+s.StreamName)
		}
	}
	for _, r := range routeTable {
		listed = append(listed, fullMethod(r.rpc))
		require.Equal(t, r.perm, auth.MethodPermission(fullMethod(r.rpc)), r.rpc)
	}
	sort.Strings(rpcs)
	sort.Strings(listed)
	require.Equal(t, rpcs, listed)
}

// Every route with every role: a role without the route's permission gets
// 403 naming it; the service role is refused at the edge; the others pass
// authorization (whatever the API then answers).
func TestEveryRouteWithEveryRole(t *testing.T) {
	box := onebox.Start(t)
	const id = "urn:vcloud:entity:broadcom:vcfService:00000000-0000-0000-0000-000000000000"
	tokens := map[auth.Role]string{
		auth.RoleAdmin: onebox.Token, auth.RoleOperator: onebox.OperatorToken,
		auth.RoleViewer: onebox.ViewerToken, auth.RoleService: onebox.ServiceToken,
	}
	for _, r := range routeTable {
		path := strings.NewReplacer("{id}", id, "{supervisor}", "sv-1", "{name}", "x.example.com", "{version}", "1.0.0").Replace(r.path)
		for _, role := range auth.Roles {
			var body any
			if r.method != http.MethodGet && r.method != http.MethodDelete {
				body = []byte("{}")
			}
			resp := box.DoWithToken(t, tokens[role], r.method, path, body)
			what := string(role) + " " + r.method + " " + r.path + ": " + string(resp.Body)
			require.NotEqual(t, http.StatusUnauthorized, resp.Status, what)
			switch {
			case role == auth.RoleService:
				require.Equal(t, http.StatusForbidden, resp.Status, what)
				require.Contains(t, string(resp.Body), "permission rest.access missing", what)
			case role.Has(r.perm):
				require.NotEqual(t, http.StatusForbidden, resp.Status, what)
			default:
				require.Equal(t, http.StatusForbidden, resp.Status, what)
				require.Contains(t, string(resp.Body), "permission "+string(r.perm)+" missing", what)
			}
		}
	}
}
