package vcfsm_test

import (
	"fmt"
	"net/http"
	"strings"
)

// The lifecycle semantics as data: every (lifecycle state, status) a
// service can be in, every action an administrator or the Service
// Manager itself can take, and what each action does in each state.
// docs/lifecycle-semantics.md is rendered from these tables
// (TestSemanticsDoc checks it; `make docs` rewrites it) and TestModelCells
// drives the all-in-one through every cell.

// modelRow is a (lifecycle state, status) and how a service gets there.
type modelRow struct {
	Key, State, Status string
	// Via says how the test reaches the row, for the doc.
	Via string
	// Targets is what the service has on its targets in this row.
	Targets string
}

// modelColumn is an action.
type modelColumn struct {
	Key string
	// Doc is the action's name in the doc; Request what the test sends.
	Doc, Request string
}

// outcome is one cell: what an action does in a row.
type outcome struct {
	// Code is the HTTP status the request answers.
	Code int
	// Msg is part of the refusal's message (or, for the Supervisor
	// upgrade check, "blocked" or "not listed").
	Msg string
	// End is the (lifecycle state/status) the service settles in, or
	// "gone" when it is deleted.
	End string
	// Version is the version it settles on ("" = 1.0.0).
	Version string
	// Targets is what the service owns on its targets once settled:
	// none, v1 (3 resources of 1.0.0), v2 (5 resources of 2.0.0),
	// only:<Kind> (that kind alone is left, still owned), v1-role (1.0.0's
	// but the GlobalRole), partial (some moved to 2.0.0, not all five).
	Targets string
	// Decided marks a cell the spec is silent on: decided as a provider's
	// administrator would expect.
	Decided bool
	// Note says what happens, for the doc.
	Note string
}

const (
	accepted202 = http.StatusAccepted
	conflict409 = http.StatusConflict
	bad400      = http.StatusBadRequest
)

var modelRows = []modelRow{
	{"registering", "inactive", "Busy", "POST /v2/vcf-services while the bundle downloads", "none"},
	{"unresolved", "inactive", "Unresolved", "registered, nothing accepted", "none"},
	{"ready", "inactive", "Ready", "registered, EULA, signatures and exactly the rendered grants accepted", "none"},
	{"download-failed", "inactive", "Unhealthy", "POST /v2/vcf-services of a bundle that cannot be downloaded", "none"},
	{"deactivated", "inactive", "Ready", "active and Healthy, then PATCH lifecycleState: inactive", "none"},
	{"installing", "active", "Busy", "activated while a target is still applying a resource", "v1"},
	{"healthy", "active", "Healthy", "activated, every resource Healthy", "v1"},
	{"unhealthy", "active", "Unhealthy", "active, a resource reports an error on its target", "v1"},
	{"upgrading", "active", "Maintenance", "PATCH source while a target is still applying a resource of the new version", "v2"},
	{"upgrade-failed", "active", "Unhealthy", "PATCH source whose new resource is refused by one Supervisor (a partial upgrade: Unhealthy, held in maintenance until rolled back or retried)", "partial"},
	{"unavailable", "active", "Unavailable", "active, a Supervisor holding its resources does not answer", "v1"},
	{"paused", "paused", "Healthy", "active and Healthy, then PATCH lifecycleState: paused", "v1"},
	{"delete-failed", "decommissioned", "Unhealthy", "DELETE whose removal of a resource the target refuses", "only:GlobalRole"},
}

var modelColumns = []modelColumn{
	{"create", "create", "POST /v2/vcf-services with the service's own source again"},
	{"values", "PATCH values", "PATCH {values: {userOverwrite}}"},
	{"activate", "PATCH lifecycleState: active", "PATCH {lifecycleState: active, accepted: the rendered grants}"},
	{"deactivate", "PATCH lifecycleState: inactive", "PATCH {lifecycleState: inactive}"},
	{"pause", "PATCH lifecycleState: paused", "PATCH {lifecycleState: paused}"},
	{"accepted", "PATCH accepted", "PATCH {accepted: EULA, signatures, the rendered grants}"},
	{"source", "PATCH source", "PATCH {source: 2.0.0}"},
	{"labels", "PATCH labels", "PATCH {labels}"},
	{"phase", "PATCH phase", "PATCH {phase: Configuring}"},
	{"put", "PUT", "PUT {id, values, lifecycleState: the current one}"},
	{"put-decommissioned", "PUT lifecycleState: decommissioned", "PUT {id, values, lifecycleState: decommissioned}"},
	{"delete", "DELETE", "DELETE"},
	{"delete-force", "DELETE forceDelete=true", "DELETE ?forceDelete=true"},
	{"rollback", "rollback", "POST /rollback {}"},
	{"supervisor-upgrade", "Supervisor upgrade", "POST /v2/supervisors/supervisor-vc1/upgrade-check {targetVersion: 9.5.0.0} (the package allows <9.5.0.0)"},
	{"auto-upgrade", "automatic upgrade", "POST /v2/vcf-service-versions {source: 2.0.0}, then PATCH {autoUpgrade: true}"},
	{"auto-rollback", "automatic rollback", "PATCH {autoRollback: true, source: 2.0.0} while one Supervisor refuses 2.0.0's new resource"},
	{"reconcile", "reconcile", "the GlobalRole is deleted on its target behind the Service Manager's back"},
	{"rollout", "fleet rollout", "PATCH {source: 2.0.0, rollout: us-west-1 first, then the rest; gateTimeout: 5s}"},
}

// Shorthands for cells.
func acc(end, targets, note string) outcome {
	return outcome{Code: accepted202, End: end, Targets: targets, Note: note}
}

func acc2(end, targets, note string) outcome {
	return outcome{Code: accepted202, End: end, Version: "2.0.0", Targets: targets, Note: note}
}

func refused(code int, msg, end, targets string) outcome {
	return outcome{Code: code, Msg: msg, End: end, Targets: targets}
}

func (o outcome) decided() outcome { o.Decided = true; return o }

func (o outcome) code(c int) outcome { o.Code = c; return o }

// cellKey names a cell.
func cellKey(row, col string) string { return row + "×" + col }

// docTable renders the semantics tables of docs/lifecycle-semantics.md:
// one table per row (state), one line per action.
func docTable() string {
	var b strings.Builder
	b.WriteString("### The actions\n\n| action | what the test sends |\n| --- | --- |\n")
	for _, c := range modelColumns {
		fmt.Fprintf(&b, "| %s | %s |\n", c.Doc, c.Request)
	}
	b.WriteString("\n")
	for _, r := range modelRows {
		fmt.Fprintf(&b, "### %s / %s (`%s`)\n\n", r.State, r.Status, r.Key)
		fmt.Fprintf(&b, "Reached: %s. On its targets: %s.\n\n", r.Via, targetsDoc(r.Targets))
		b.WriteString("| action | answer | what happens | ends | on the targets |\n| --- | --- | --- | --- | --- |\n")
		for _, c := range modelColumns {
			o, ok := modelTable[cellKey(r.Key, c.Key)]
			if !ok {
				fmt.Fprintf(&b, "| %s | (missing) | | | |\n", c.Doc)
				continue
			}
			answer := fmt.Sprintf("%d", o.Code)
			if o.Msg != "" {
				answer += fmt.Sprintf(" “…%s…”", o.Msg)
			}
			note := o.Note
			if note == "" && o.Code >= 400 {
				note = "refused: nothing changes"
			}
			if o.Decided {
				note = "**decided**: " + note
			}
			end := o.End
			if o.Version != "" && o.Version != "none" && end != "gone" {
				end += " " + o.Version
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", c.Doc, answer, strings.TrimSpace(note), end, targetsDoc(o.Targets))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func targetsDoc(t string) string {
	switch {
	case t == "none":
		return "nothing"
	case t == "v1":
		return "1.0.0's resources"
	case t == "v2":
		return "2.0.0's resources"
	case t == "partial":
		return "some resources moved to 2.0.0"
	case t == "v1-role":
		return "1.0.0's resources but the GlobalRole"
	case strings.HasPrefix(t, "only:"):
		return "only its " + strings.TrimPrefix(t, "only:")
	case strings.HasPrefix(t, "orphan:"):
		return "its " + strings.TrimPrefix(t, "orphan:") + " left behind (listed as an orphan)"
	}
	return t
}
