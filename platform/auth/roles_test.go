package auth

import (
	"testing"

	"github.com/stretchr/testify/require"
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
	_, err = ParseTokens("x:operater:typo-token-0123456789abcdef")
	require.EqualError(t, err, `token entry "x:<redacted>": unknown role "operater": want admin, operator, viewer or service`)
	require.NotContains(t, err.Error(), "typo-token")
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
