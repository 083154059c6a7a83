package auth

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

func TestParseTokensWithRoles(t *testing.T) {
	tokens, err := ParseTokens("root:admin-token-0123456789abcdef, ops:operator:ops-token-0123456789abcdef\naudit:viewer:view-token-0123456789abcdef\n# comment\n")
	require.NoError(t, err)
	require.Equal(t, 3, tokens.Len())
	for token, want := range map[string]Identity{
		"admin-token-0123456789abcdef": {"root", RoleAdmin},
		"ops-token-0123456789abcdef":   {"ops", RoleOperator},
		"view-token-0123456789abcdef":  {"audit", RoleViewer},
	} {
		id, ok := tokens.Lookup(token)
		require.True(t, ok)
		require.Equal(t, want, id)
	}
}

// A malformed entry is named by its position, never shown: its fields may
// be in the wrong order, so any of them may be the token.
func TestTokenErrorsNameThePlaceNotTheContent(t *testing.T) {
	const secret = "SECRET-token-0123456789abcdef"
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"fields swapped", "ok:viewer:ok-token-0123456789abcdef,x:" + secret + ":viewer", "token entry 2: the second field is not a role (admin, operator, viewer or service): entries are principal:role:token"},
		{"mistyped role", "x:operater:" + secret, "token entry 1: the second field is not a role (admin, operator, viewer or service): entries are principal:role:token"},
		{"token first", secret, "token entry 1: want principal:role:token or principal:token"},
		{"short token", "x:viewer:short", "token entry 1: the token is shorter than 16 characters"},
		{"empty principal", ":viewer:" + secret, "token entry 1: empty principal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTokens(tc.spec)
			require.EqualError(t, err, tc.want)
			require.NotContains(t, err.Error(), "SECRET")
		})
	}

	tokens := &Tokens{}
	err := tokens.AddLines("# admins\nroot:admin:root-token-0123456789abcdef\n\nleak:" + secret + ":admin\n")
	require.EqualError(t, err, "line 4: the second field is not a role (admin, operator, viewer or service): entries are principal:role:token")
	require.NotContains(t, err.Error(), "SECRET")
	require.NotContains(t, err.Error(), "leak", "the principal may be a token too when the fields are swapped")
}

func TestAuthorize(t *testing.T) {
	const create = "/vcfservices.lifecycle.v1.LifecycleService/CreateService"
	const render = "/vcfservices.renderer.v1.RendererService/RenderResources"
	require.NoError(t, Authorize(Identity{"a", RoleOperator}, create))
	require.EqualError(t, Authorize(Identity{"v", RoleViewer}, create), `permission services.write missing: principal "v" has role viewer`)
	require.EqualError(t, Authorize(Identity{"s", RoleService}, create), `permission services.write missing: principal "s" has role service`)
	require.NoError(t, Authorize(Identity{"s", RoleService}, render))
	require.Error(t, Authorize(Identity{"o", RoleOperator}, render), "only services and admins call internal RPCs")
	const apply = "/vcfservices.target.v1.TargetService/Apply"
	require.NoError(t, Authorize(Identity{"s", RoleService}, apply), "lifecycle replicas reach the simulator server with the service token")
	require.Error(t, Authorize(Identity{"o", RoleOperator}, apply))
	require.Equal(t, PermAdmin, MethodPermission("/vcfservices.lifecycle.v1.LifecycleService/SomethingNew"), "unlisted methods are admin-only")
	require.NoError(t, Authorize(Identity{"r", RoleAdmin}, "/vcfservices.lifecycle.v1.LifecycleService/SomethingNew"))
}

// Only callers that may make internal calls speak for someone else.
func TestOnBehalfOf(t *testing.T) {
	md := metadata.Pairs(OnBehalfOfMetadata, "audit")
	for _, tc := range []struct {
		role Role
		want string
	}{
		{RoleService, "audit"},
		{RoleAdmin, "audit"},
		{RoleViewer, "caller"},
		{RoleOperator, "caller"},
	} {
		ctx := WithIdentity(metadata.NewIncomingContext(context.Background(), md), Identity{Principal: "caller", Role: tc.role})
		require.Equal(t, tc.want, OnBehalfOf(ctx), tc.role)
	}
	ctx := WithIdentity(context.Background(), Identity{Principal: "internal", Role: RoleService})
	require.Equal(t, "internal", OnBehalfOf(ctx), "a service serving nobody in particular is itself")

	var sent metadata.MD
	invoker := func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		sent, _ = metadata.FromOutgoingContext(ctx)
		return nil
	}
	caller := WithIdentity(context.Background(), Identity{Principal: "audit", Role: RoleViewer})
	require.NoError(t, OnBehalfOfUnaryClientInterceptor(caller, "/x/Y", nil, nil, nil, invoker))
	require.Equal(t, []string{"audit"}, sent.Get(OnBehalfOfMetadata))
	require.NoError(t, OnBehalfOfUnaryClientInterceptor(context.Background(), "/x/Y", nil, nil, nil, invoker))
	require.Empty(t, sent.Get(OnBehalfOfMetadata), "no caller, nothing named")
}
