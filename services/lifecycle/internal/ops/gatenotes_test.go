package ops

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
)

// A wave's WARNINGs and INFOs reach the operation's record once each,
// naming the Supervisors they were reported for; ERRORs block the target
// and are not notes.
func TestGateNotesFold(t *testing.T) {
	g := &gateResults{errors: map[string][]string{}, notes: map[string][]lifecycle.ErrorDetail{}}
	g.add("sv-b", lifecycle.CheckResult{Severity: "WARNING", Message: "disk"}, "pre-check hook")
	g.add("sv-a", lifecycle.CheckResult{Severity: "warning", Message: "disk"}, "pre-check hook")
	g.add("sv-a", lifecycle.CheckResult{Severity: "INFO", Message: "fine"}, "compatibility")
	g.add("sv-a", lifecycle.CheckResult{Severity: "ERROR", Message: "no"}, "pre-check hook")
	require.Equal(t, []lifecycle.ErrorDetail{
		{Type: lifecycle.ErrTypeInstall, Severity: lifecycle.SeverityWarn, Message: "pre-check hook on sv-a, sv-b: disk"},
		{Type: lifecycle.ErrTypeInstall, Severity: lifecycle.SeverityInfo, Message: "compatibility on sv-a: fine"},
	}, g.foldedNotes())
	require.Equal(t, []string{"pre-check hook: no"}, g.errors["sv-a"])
	require.Len(t, g.notes["sv-a"], 2, "each target keeps its own notes too")
}
