package vcfctl

import (
	"fmt"
	"io"
	"sync"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
)

// progress shows a running operation from its watch events.
type progress interface {
	update(ev *lifecyclev1.WatchServiceResponse)
	// finish ends the display; ok says whether the goal was reached.
	finish(ok bool)
}

func (a *App) newProgress(what string) progress {
	if a.tty {
		return newBar(a.io.Out, what)
	}
	return &plainProgress{w: a.io.Out, what: what}
}

// stepLabel names where the awaited operation is: its type and step; the
// service's status when it reports none (or the action started none).
func stepLabel(ev *lifecyclev1.WatchServiceResponse) string {
	op := ev.GetOperation()
	if op == nil || op.GetStep() == "" {
		return "status " + ev.GetStatus()
	}
	return op.GetType() + ": " + op.GetStep()
}

// plainProgress prints one line per step change, for logs and pipes.
type plainProgress struct {
	w    io.Writer
	what string
	last string
}

func (p *plainProgress) update(ev *lifecyclev1.WatchServiceResponse) {
	line := stepLabel(ev)
	if ev.GetOperation().GetStep() != "" {
		line += " (" + ev.GetStatus()
		if ev.GetPhase() != "" {
			line += ", " + ev.GetPhase()
		}
		line += ")"
	} else if ev.GetPhase() != "" {
		line += " (" + ev.GetPhase() + ")"
	}
	if line == p.last {
		return
	}
	p.last = line
	_, _ = fmt.Fprintf(p.w, "%s: %s\n", p.what, line)
}

func (p *plainProgress) finish(bool) {}

// barProgress is a live bar with the current step and percent.
type barProgress struct {
	p   *mpb.Progress
	bar *mpb.Bar

	mu       sync.Mutex
	label    string
	finished bool
}

func newBar(w io.Writer, what string) *barProgress {
	b := &barProgress{label: "waiting"}
	b.p = mpb.New(mpb.WithOutput(w), mpb.WithAutoRefresh(), mpb.WithWidth(40))
	b.bar = b.p.AddBar(100,
		mpb.PrependDecorators(decor.Name(what+" "), decor.Any(func(decor.Statistics) string {
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.label
		}, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace)),
	)
	return b
}

func (b *barProgress) update(ev *lifecyclev1.WatchServiceResponse) {
	b.mu.Lock()
	b.label = stepLabel(ev)
	if m := ev.GetOperation().GetMessage(); m != "" && m != "done" {
		b.label += " " + m
	}
	b.mu.Unlock()
	if pc := ev.GetOperation().GetPercent(); pc >= 0 && pc < 100 {
		b.bar.SetCurrent(int64(pc))
	}
}

func (b *barProgress) finish(ok bool) {
	b.mu.Lock()
	already := b.finished
	b.finished = true
	if ok {
		b.label = "done"
	}
	b.mu.Unlock()
	if already {
		return
	}
	if ok {
		b.bar.SetCurrent(100)
	} else {
		b.bar.Abort(false)
	}
	b.p.Wait()
}
