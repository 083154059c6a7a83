package vcfctl

import (
	"fmt"
	"io"
	"strings"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
)

// waveCount is how a wave's targets stand.
type waveCount struct {
	total, done, failed, window, approval int
}

// waveCounts counts each wave's targets: done, failed, waiting for a
// maintenance window, waiting for an administrator's approval (the
// targets of a wave that waits for it).
func waveCounts(r *lifecyclev1.Rollout) []waveCount {
	counts := make([]waveCount, len(r.GetWaves()))
	for _, t := range r.GetTargets() {
		i := int(t.GetWave()) - 1
		if i < 0 || i >= len(counts) {
			continue
		}
		c := &counts[i]
		c.total++
		switch t.GetState() {
		case "Done":
			c.done++
		case "Failed":
			c.failed++
		case "WaitingForWindow":
			c.window++
		case "Pending", "Blocked":
			if r.GetWaves()[i].GetState() == "WaitingApproval" {
				c.approval++
			}
		}
	}
	return counts
}

// waveLine is one wave's progress: "wave 1/2 canary: Done: 1/1 done, 0
// failed, 0 waiting for a window, 0 waiting for approval".
func waveLine(r *lifecyclev1.Rollout, i int, c waveCount) string {
	w := r.GetWaves()[i]
	name := ""
	if w.GetName() != "" {
		name = " " + w.GetName()
	}
	return fmt.Sprintf("wave %d/%d%s: %s: %d/%d done, %d failed, %d waiting for a window, %d waiting for approval",
		i+1, len(r.GetWaves()), name, w.GetState(), c.done, c.total, c.failed, c.window, c.approval)
}

// rolloutHeader is the rollout's line: versions, state, wave, reason.
func rolloutHeader(r *lifecyclev1.Rollout) string {
	text := fmt.Sprintf("rollout %s -> %s: %s", orDash(r.GetFromVersion()), r.GetToVersion(), r.GetState())
	if r.GetWave() > 0 && len(r.GetWaves()) > 0 {
		text += fmt.Sprintf(", wave %d of %d", r.GetWave(), len(r.GetWaves()))
	}
	if r.GetPaused() && r.GetState() != "Paused" {
		text += ", paused"
	}
	if r.GetReason() != "" {
		text += ": " + r.GetReason()
	}
	return text
}

// rolloutProgress prints a rollout as it moves: its line and each wave's
// line, each when it changed.
type rolloutProgress struct {
	w     io.Writer
	what  string
	lines map[string]string
	// hinted: the approval hint was given for this wave.
	hinted int32
}

func newRolloutProgress(w io.Writer, what string) *rolloutProgress {
	return &rolloutProgress{w: w, what: what, lines: map[string]string{}}
}

func (p *rolloutProgress) show(r *lifecyclev1.Rollout, subject string) {
	p.print("rollout", rolloutHeader(r))
	for i, c := range waveCounts(r) {
		p.print(fmt.Sprint(i), waveLine(r, i, c))
	}
	if r.GetState() == "WaitingApproval" && p.hinted != r.GetWave() {
		p.hinted = r.GetWave()
		_, _ = fmt.Fprintf(p.w, "%s: wave %s waits for an administrator's approval: 'vcfctl rollout approve %s'\n", p.what, waveName(r, r.GetWave()), subject)
	}
}

func (p *rolloutProgress) finish(bool) {}

func (p *rolloutProgress) print(key, line string) {
	if p.lines[key] == line {
		return
	}
	p.lines[key] = line
	_, _ = fmt.Fprintf(p.w, "%s: %s\n", p.what, line)
}

// writeRollout renders a rollout for a person: its line, the waves and
// every target.
func writeRollout(w io.Writer, r *lifecyclev1.Rollout, colour bool) {
	_, _ = fmt.Fprintf(w, "Rollout %s -> %s: %s (operation %s)\n", orDash(r.GetFromVersion()), r.GetToVersion(), r.GetState(), r.GetOperationId())
	if r.GetReason() != "" {
		_, _ = fmt.Fprintf(w, "Reason: %s\n", r.GetReason())
	}
	if r.GetPaused() {
		_, _ = fmt.Fprintln(w, "Paused: 'vcfctl rollout resume' lets it go on")
	}
	_, _ = fmt.Fprintln(w, "\nWaves:")
	wt := newTable("WAVE", "NAME", "STATE", "TARGETS", "DONE", "FAILED", "WAITING FOR WINDOW", "WAITING FOR APPROVAL", "APPROVED BY")
	for i, c := range waveCounts(r) {
		wv := r.GetWaves()[i]
		wt.row(fmt.Sprint(i+1), orDash(wv.GetName()), wv.GetState(), fmt.Sprint(c.total), fmt.Sprint(c.done), fmt.Sprint(c.failed),
			fmt.Sprint(c.window), fmt.Sprint(c.approval), orDash(wv.GetApprovedBy()))
	}
	wt.write(w, colour)
	_, _ = fmt.Fprintln(w, "\nTargets:")
	tt := newTable("SUPERVISOR", "REGION", "WAVE", "VERSION", "STATE", "MESSAGE")
	for _, t := range r.GetTargets() {
		msg := t.GetMessage()
		if t.GetState() == "WaitingForWindow" && t.GetWindowOpens() != "" {
			msg = strings.TrimSpace(msg + " window opens " + shortTime(t.GetWindowOpens()))
		}
		for _, n := range t.GetNotes() {
			msg = strings.TrimSpace(msg + " [" + n.GetSeverity() + "] " + n.GetMessage())
		}
		tt.row(t.GetSupervisor(), orDash(t.GetRegion()), fmt.Sprint(t.GetWave()), orDash(t.GetVersion()), t.GetState(), msg)
	}
	tt.write(w, colour)
}

// rolloutSummaryText is a service's rollout in one line: "to 2.0.0
// Running, wave 2 of 2: 1/2 done, 0 failed, 1 waiting for a window".
func rolloutSummaryText(r *lifecyclev1.RolloutSummary) string {
	return fmt.Sprintf("to %s %s, wave %d of %d: %d/%d done, %d failed, %d waiting for a window",
		r.GetToVersion(), r.GetState(), r.GetWave(), r.GetWaves(), r.GetDone(), r.GetTotal(), r.GetFailed(), r.GetWaitingForWindow())
}
