package vcfsm_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
	"github.com/vcfsm/vcfsm/services/vcfsm/onebox"
)

// lifecycleClient is a gRPC client of the box carrying token.
func lifecycleClient(t *testing.T, box *onebox.Box, token string) lifecyclev1.LifecycleServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(box.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithPerRPCCredentials(bearer(token)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return lifecyclev1.NewLifecycleServiceClient(conn)
}

// An administrator overrides, for one upgrade, a compatibility ERROR (a
// destination constraint) and a pre-check hook ERROR, giving a reason: the
// upgrade goes through, and the history and the state record who, why and
// which results. An operator's override is 403 over REST and
// PermissionDenied over gRPC; an override without a reason is 400 naming
// override.reason; an override with no upgrade is 400.
func TestOverrideCheckErrorsAudited(t *testing.T) {
	hook := newHook(t)
	w := newWorld(t, withHook(hook))
	hooked := v1
	hooked.Annotations = merge(hookAnnotations, map[string]string{"appplatform.vmware.com/destination-version-upgrade-constraints": "<3.0.0"})
	id := w.installed(t, w.publish(t, hooked))
	hook.answer(200, `{"results":[{"severity":"ERROR","message":"backing PVC is not bound"},{"severity":"INFO","message":"fine"}]}`)
	target := sameTerms("3.0.0")
	target.Annotations = map[string]string{"appplatform.vmware.com/compatibility-check_data": `{"check":"pvc"}`}
	src := w.publish(t, target)

	const reason = "PVC bound by hand; vendor case 4711"
	body := `{"source":"` + src + `","override":{"reason":"` + reason + `"}}`
	denied := w.box.DoWithToken(t, onebox.OperatorToken, http.MethodPatch, "/v2/vcf-services/"+id, []byte(body))
	require.Equal(t, http.StatusForbidden, denied.Status, "%s", denied.Body)
	require.Contains(t, string(denied.Body), "override is an administrator's: permission admin missing")
	_, err := lifecycleClient(t, w.box, onebox.OperatorToken).PatchService(context.Background(), &lifecyclev1.PatchServiceRequest{
		Id: id, Service: &lifecyclev1.ServicePatch{Source: src, Override: &lifecyclev1.Override{Reason: reason}}})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	require.ErrorContains(t, err, "override is an administrator's")

	noReason := patch(t, w, id, `{"source":"`+src+`","override":{"reason":" "}}`, http.StatusBadRequest)
	require.Contains(t, string(noReason.Body), "override.reason: required")
	noUpgrade := patch(t, w, id, `{"labels":{"a":"b"},"override":{"reason":"`+reason+`"}}`, http.StatusBadRequest)
	require.Contains(t, string(noUpgrade.Body), "override goes with")
	require.Equal(t, "1.0.0", w.get(t, id).Version, "nothing refused started")

	patch(t, w, id, body, http.StatusAccepted)
	op := w.waitOp(t, id, "upgrade", "3.0.0")
	require.Equal(t, "Succeeded", op.Outcome, "%+v", op)
	require.NotNil(t, op.Override, "the history records the override")
	require.Equal(t, "e2e", op.Override.Principal)
	require.Equal(t, reason, op.Override.Reason)
	var overridden []string
	for _, r := range op.Override.Results {
		require.Equal(t, "ERROR", r.Severity)
		overridden = append(overridden, r.Message)
	}
	// One compatibility ERROR, and the hook's from each Supervisor it ran on.
	require.GreaterOrEqual(t, len(overridden), 2, "%v", overridden)
	require.Contains(t, fmt.Sprint(overridden), "<3.0.0", "the compatibility ERROR")
	require.Contains(t, fmt.Sprint(overridden), "backing PVC is not bound", "the hook ERROR")

	v := w.waitStatus(t, id, "Healthy")
	require.Equal(t, "3.0.0", v.Version)
	st := w.box.Do(t, http.MethodGet, "/v2/vcf-services/"+id+"/state", nil)
	require.Equal(t, http.StatusOK, st.Status, "%s", st.Body)
	var state struct {
		Operation struct {
			Override struct {
				Principal, Reason string
				Results           []struct{ Severity, Message string }
			}
		}
	}
	st.JSON(t, &state)
	require.Equal(t, "e2e", state.Operation.Override.Principal, "the state shows the override: %s", st.Body)
	require.Equal(t, reason, state.Operation.Override.Reason)
	require.Len(t, state.Operation.Override.Results, len(overridden))
}

// builtIn skips every compatibility constraint: only an administrator may
// set it, on create and on register, over REST and gRPC; the history (and
// the catalog) record who did. builtIn:false needs nothing.
func TestBuiltInIsAnAdministrators(t *testing.T) {
	w := newWorld(t)
	src := w.publish(t, v1)
	for _, c := range []struct{ path, what string }{
		{"/v2/vcf-services", "create"},
		{"/v2/vcf-service-versions", "register"},
	} {
		resp := w.box.DoWithToken(t, onebox.OperatorToken, http.MethodPost, c.path, map[string]any{"source": src, "builtIn": true})
		require.Equal(t, http.StatusForbidden, resp.Status, "%s: %s", c.what, resp.Body)
		require.Contains(t, string(resp.Body), "builtIn is an administrator's: permission admin missing", c.what)
	}
	ops := lifecycleClient(t, w.box, onebox.OperatorToken)
	_, err := ops.CreateService(context.Background(), &lifecyclev1.CreateServiceRequest{Source: src, BuiltIn: true})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	_, err = ops.RegisterServiceVersion(context.Background(), &lifecyclev1.RegisterServiceVersionRequest{Source: src, BuiltIn: true})
	require.Equal(t, codes.PermissionDenied, status.Code(err), "%v", err)
	list := w.box.Do(t, http.MethodGet, "/v2/vcf-services", nil)
	require.NotContains(t, string(list.Body), arcturusName, "nothing was created")

	plain := w.box.DoWithToken(t, onebox.OperatorToken, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": src, "builtIn": false})
	require.Equal(t, http.StatusOK, plain.Status, "builtIn:false is anyone's: %s", plain.Body)

	reg := w.box.Do(t, http.MethodPost, "/v2/vcf-service-versions", map[string]any{"source": src, "builtIn": true})
	require.Equal(t, http.StatusOK, reg.Status, "%s", reg.Body)
	require.Contains(t, string(reg.Body), `"builtInBy":{"principal":"e2e"`)

	resp := w.box.Do(t, http.MethodPost, "/v2/vcf-services", map[string]any{"source": src, "builtIn": true})
	require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
	var created svcView
	resp.JSON(t, &created)
	w.waitStatus(t, created.ID, "Unresolved")
	var register *opView
	for _, op := range w.ops(t, created.ID) {
		if op.Type == "register" {
			register = &op
		}
	}
	require.NotNil(t, register)
	require.NotNil(t, register.Override, "the history records who declared it built-in")
	require.Equal(t, "e2e", register.Override.Principal)
	require.Contains(t, register.Override.Reason, "builtIn")
}
