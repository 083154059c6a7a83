package vcfsm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"

	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// The walking skeleton: POST through the gateway to lifecycle and the
// store, then GET it back, over real sockets.
func TestCreateThenGet(t *testing.T) {
	box := onebox.Start(t)
	created := box.Do(t, http.MethodPost, "/v2/vcf-services", map[string]any{"source": "https://depot.example.com:9443/arcturus-9.1.0.0.tar"})
	require.Equal(t, http.StatusOK, created.Status, "%s", created.Body)
	var svc map[string]any
	created.JSON(t, &svc)
	id, _ := svc["id"].(string)
	require.True(t, strings.HasPrefix(id, "urn:vcloud:entity:broadcom:vcfService:"), id)
	require.Equal(t, "inactive", svc["lifecycleState"])
	require.Equal(t, "https://depot.example.com:9443/arcturus-9.1.0.0.tar", svc["source"])
	require.Equal(t, map[string]any{"eula": false, "signatures": false, "accessGrants": map[string]any{}}, svc["accepted"])

	for _, prefix := range []string{"/v2", "/api/extension/broadcom/service-manager/v2"} {
		got := box.Do(t, http.MethodGet, prefix+"/vcf-services/"+id, nil)
		require.Equal(t, http.StatusOK, got.Status, "%s", got.Body)
		var again map[string]any
		got.JSON(t, &again)
		require.Equal(t, id, again["id"])
		require.Equal(t, svc["source"], again["source"])
	}

	missing := box.Do(t, http.MethodGet, "/v2/vcf-services/urn:vcloud:entity:broadcom:vcfService:00000000-0000-0000-0000-000000000000", nil)
	require.Equal(t, http.StatusNotFound, missing.Status)
}

func TestUnauthenticatedIs401(t *testing.T) {
	box := onebox.Start(t)
	for _, token := range []string{"", "wrong-token-wrong-token"} {
		resp := box.DoWithToken(t, token, http.MethodGet, "/v2/vcf-services?page=1&pageSize=25", nil)
		require.Equal(t, http.StatusUnauthorized, resp.Status, "token %q", token)
	}
	// Health and the API document need no token.
	require.Equal(t, http.StatusOK, box.DoWithToken(t, "", http.MethodGet, "/healthz", nil).Status)
	require.Equal(t, http.StatusOK, box.DoWithToken(t, "", http.MethodGet, "/v2/openapi.json", nil).Status)
}

func TestBadSourceIs400(t *testing.T) {
	box := onebox.Start(t)
	for _, src := range []string{"", "ftp://x/y.tar", "http://depot/x.tar", "https://depot/x.zip"} {
		resp := box.Do(t, http.MethodPost, "/v2/vcf-services", map[string]any{"source": src})
		require.Equal(t, http.StatusBadRequest, resp.Status, "source %q: %s", src, resp.Body)
		require.Contains(t, string(resp.Body), "source")
	}
}

// grpcurl list, done with the reflection API it uses.
func TestReflectionListsAllServices(t *testing.T) {
	box := onebox.Start(t)
	conn, err := grpc.NewClient(box.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	hc, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err, "health needs no token")
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, hc.GetStatus())

	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	sort.Strings(names)
	for _, want := range []string{
		"vcfservices.compatibility.v1.CompatibilityService",
		"vcfservices.lifecycle.v1.LifecycleService",
		"vcfservices.precheck.v1.PrecheckService",
		"vcfservices.renderer.v1.RendererService",
	} {
		require.Contains(t, names, want)
	}
}

// Every path of api.md is in the served OpenAPI document.
func TestOpenAPIListsEveryAPIPath(t *testing.T) {
	box := onebox.Start(t)
	resp := box.DoWithToken(t, "", http.MethodGet, "/v2/openapi.json", nil)
	require.Equal(t, http.StatusOK, resp.Status)
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(resp.Body, &doc))
	want := map[string][]string{
		"/v2/vcf-services":                              {"post", "get"},
		"/v2/vcf-services/{id}":                         {"get", "put", "patch", "delete"},
		"/v2/vcf-services/{id}/state":                   {"get"},
		"/v2/vcf-services/{id}/inventory":               {"get"},
		"/v2/vcf-services/{id}/metadata":                {"get"},
		"/v2/vcf-services/{id}/package":                 {"get"},
		"/v2/vcf-services/{id}/render-effective-values": {"post"},
		"/v2/vcf-services/{id}/render-resources":        {"post"},
		"/v2/vcf-services/{id}/render-access-grants":    {"post"},
		"/v2/vcf-services/{id}/rollback":                {"post"},
	}
	for path, methods := range want {
		ops, ok := doc.Paths[path]
		require.True(t, ok, "OpenAPI document lacks %s", path)
		for _, m := range methods {
			require.Contains(t, ops, m, "%s %s", m, path)
		}
	}
}
