package vcfctl_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/cli/internal/vcfctl"
	"github.com/vcfsm/vcfsm/services/lifecycle/bundletest"
	"github.com/vcfsm/vcfsm/services/vcfsm/app"
)

// 'service plan --rollout FILE --store' shows a line per Supervisor by wave
// and keeps the plan; 'service upgrade --plan ID' executes it as approved;
// executing it again is refused with what changed; --plan goes alone.
func TestFleetPlanKeptAndExecuted(t *testing.T) {
	w := newWorld(t, fastRollouts)
	w.login(t)
	w.ok(t, "service", "create", w.publish(t, v1), "--wait")
	w.ok(t, "service", "activate", arcturusName, "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait")
	src2 := w.publish(t, v2)
	strategy := w.file(t, "canary.yaml", canaryRestYAML)

	out := w.ok(t, "service", "plan", arcturusName, "--source", src2, "--rollout", strategy)
	require.Regexp(t, `1 canary\s+supervisor-vc1\s+us-west-1\s+-\s+allowed`, out)
	require.Regexp(t, `2 rest\s+supervisor-eu1\s+eu-central-1\s+-\s+allowed`, out)
	require.NotContains(t, out, "Plan kept", "nothing kept without --store")

	res := w.run(t, "service", "plan", arcturusName, "--source", src2, "--rollout", strategy, "--store")
	require.Equal(t, vcfctl.ExitUsage, res.code, "2.0.0 changes its grants: the approval must accept them\n%s%s", res.out, res.errOut)
	require.Contains(t, res.errOut, "--accept-plan-grants")
	res = w.run(t, "service", "plan", arcturusName, "--source", src2, "--rollout", strategy, "--store", "--accept-eula", "--accept-signatures", "--accept-plan-grants")
	require.Equal(t, vcfctl.ExitOK, res.code, "%s%s", res.out, res.errOut)
	m := regexp.MustCompile(`Plan kept as (plan-[0-9a-f-]+) until `).FindStringSubmatch(res.out + res.errOut)
	require.NotNil(t, m, "%s%s", res.out, res.errOut)
	id := m[1]

	bad := w.run(t, "service", "upgrade", arcturusName, "--plan", id, "--source", src2)
	require.Equal(t, vcfctl.ExitUsage, bad.code)
	require.Contains(t, bad.errOut, "--plan executes a stored plan as it was approved")

	w.ok(t, "service", "upgrade", arcturusName, "--plan", id, "--wait")
	require.Equal(t, "Succeeded", w.rolloutState(t, arcturusName).State, "the plan's rollout ran")
	require.Contains(t, w.ok(t, "service", "get", arcturusName), "2.0.0")

	again := w.run(t, "service", "upgrade", arcturusName, "--plan", id)
	require.Equal(t, vcfctl.ExitError, again.code)
	require.Contains(t, again.errOut, "changed since it was made: service ")
}

// A target version no trusted key verifies: 'service plan' shows the
// signature policy's ERROR among the checks and on every fleet line, and
// exits 3 (blocked).
func TestPlanShowsSignaturePolicyError(t *testing.T) {
	vendor, vendorPEM := bundletest.NewSigningKey(t, t.TempDir(), "broadcom")
	w := newWorld(t, func(c *app.Config) { c.Lifecycle.SignatureKeys = vendorPEM })
	w.login(t)
	w.publish(t, v1)
	d := bundletest.Digest(t, w.reg, w.reg.Ref("arcturus-bundle:1.0.0"))
	bundletest.SignWithKey(t, w.reg, "arcturus-bundle", d, d, vendor)
	w.ok(t, "service", "create", w.reg.OCI("arcturus-bundle:1.0.0"), "--wait")
	w.ok(t, "service", "activate", arcturusName, "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait")
	w.publish(t, v2) // unsigned
	strategy := w.file(t, "canary.yaml", canaryRestYAML)

	res := w.run(t, "service", "plan", arcturusName, "--source", w.reg.OCI("arcturus-bundle:2.0.0"), "--rollout", strategy)
	require.Equal(t, vcfctl.ExitBlocked, res.code, "%s%s", res.out, res.errOut)
	require.Contains(t, res.out, "blocked: signature policy: version 2.0.0 of "+arcturusName+" may not go live")
	require.Regexp(t, `ERROR\s+SIGNATURE\s+`+arcturusName+` 2.0.0\s+version 2.0.0 of .* carries no cosign signature`, res.out)
	require.Regexp(t, `1 canary\s+supervisor-vc1\s+us-west-1\s+-\s+BLOCKED\s+signature policy: `, res.out)
	require.Regexp(t, `2 rest\s+supervisor-eu1\s+eu-central-1\s+-\s+BLOCKED\s+signature policy: `, res.out)
}
