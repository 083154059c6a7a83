package steps

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// The rule of which registered versions an upgrade may pick, one row per
// reason a version is left out.
func TestUpgradeCandidates(t *testing.T) {
	entry := func(v string, edit ...func(*lifecycle.CatalogEntry)) *lifecycle.CatalogEntry {
		e := &lifecycle.CatalogEntry{Name: "a", Version: v, Status: lifecycle.StatusReady, Digest: "sha256:" + v}
		for _, f := range edit {
			f(e)
		}
		return e
	}
	entries := []*lifecycle.CatalogEntry{
		entry("0.9.0"), entry("1.0.0"), // older, installed
		entry("1.1.0"),
		entry("1.2.0", func(e *lifecycle.CatalogEntry) { e.Status = lifecycle.StatusBusy }), // not Ready
		entry("1.3.0", func(e *lifecycle.CatalogEntry) { e.Digest = "" }),                   // not downloaded
		entry("1.4.0", func(e *lifecycle.CatalogEntry) { e.Quarantine = &lifecycle.Quarantine{Reason: "failed"} }),
		entry("1.5.0-rc.1"), // a pre-release
		entry("1.2.5"),
	}
	cases := []struct {
		prereleases bool
		want        []string
	}{
		{false, []string{"1.2.5", "1.1.0"}},
		{true, []string{"1.5.0-rc.1", "1.2.5", "1.1.0"}},
	}
	for _, c := range cases {
		svc := &lifecycle.Service{Name: "a", Version: "1.0.0", AutoUpgradePrereleases: c.prereleases}
		var got []string
		for _, e := range UpgradeCandidates(entries, svc) {
			got = append(got, e.Version)
		}
		require.Equal(t, c.want, got, "prereleases=%v", c.prereleases)
	}
}

// Identical hook answers from several Supervisors are one result naming
// them all; different answers stay apart.
func TestHookReportFoldsPerSupervisor(t *testing.T) {
	res := func(sev, msg, sup string) lifecycle.CheckResult {
		return lifecycle.CheckResult{Severity: sev, Kind: KindHook, Message: msg, Subject: sup}
	}
	r := hookReport([]lifecycle.HookResult{
		{Supervisor: "sv-b", Results: []lifecycle.CheckResult{res("WARNING", "disk", "sv-b"), res("INFO", "fine", "sv-b")}},
		{Supervisor: "sv-a", Results: []lifecycle.CheckResult{res("warning", "disk", "sv-a"), res("INFO", "other", "sv-a")}},
	})
	require.Len(t, r.Results, 3)
	require.Equal(t, "sv-a, sv-b", r.Results[0].Subject)
	require.Equal(t, "sv-b", r.Results[1].Subject)
	require.Equal(t, "sv-a", r.Results[2].Subject)
	details, blockers := resultDetails(r.Results)
	require.Empty(t, blockers)
	require.Equal(t, "pre-check hook on sv-a, sv-b: disk", details[0].Message)
	require.Equal(t, lifecycle.SeverityWarn, details[0].Severity)

	alone := hookReport([]lifecycle.HookResult{{Results: []lifecycle.CheckResult{res("ERROR", "no", "svc")}}})
	details, blockers = resultDetails(alone.Results)
	require.Equal(t, []string{"pre-check hook: no"}, blockers)
	require.Equal(t, lifecycle.SeverityError, details[0].Severity)
}
