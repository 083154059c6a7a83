package vcfctl

import (
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
)

// progress shows a running operation from its watch events.
type progress interface {
	update(ev *lifecyclev1.WatchServiceResponse)
	// note says what the wait waits on once the operation has succeeded
	// (the resources still pending); "" clears it.
	note(text string)
	// finish ends the display; ok says whether the goal was reached.
	finish(ok bool)
}

// newProgress draws a live bar where it can: on a terminal that has a
// window size and is not TERM=dumb. Elsewhere it prints plain lines.
func (p *printer) newProgress(what string) progress {
	if p.liveTerminal(p.status) {
		return newBar(p.status, what)
	}
	return &plainProgress{w: p.status, what: what}
}

// liveTerminal tells whether w can show a redrawn bar.
func (p *printer) liveTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || p.env("TERM") == "dumb" {
		return false
	}
	fd := int(f.Fd()) //nolint:gosec // a file descriptor fits an int
	if !term.IsTerminal(fd) {
		return false
	}
	cols, _, err := term.GetSize(fd)
	return err == nil && cols > 0
}

// stepLabel names where the awaited operation is: its step and message;
// the service's status when it reports none (or the action started none).
func stepLabel(ev *lifecyclev1.WatchServiceResponse) string {
	op := ev.GetOperation()
	if op == nil || op.GetStep() == "" {
		return "status " + ev.GetStatus()
	}
	return op.GetStep()
}

// plainProgress prints one line per change, for logs, pipes and dumb
// terminals: "upgrade: precheck-hook (Healthy, Upgrading)".
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
	p.print(line)
}

func (p *plainProgress) note(text string) {
	if text != "" {
		p.print(text)
	}
}

func (p *plainProgress) print(line string) {
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
	percent  int64
	finished bool
}

func newBar(w io.Writer, what string) *barProgress {
	b := &barProgress{label: "waiting"}
	b.p = mpb.New(mpb.WithOutput(w), mpb.WithAutoRefresh(), mpb.WithWidth(40))
	b.bar = b.p.AddBar(100,
		mpb.PrependDecorators(decor.Name(what+": "), decor.Any(func(decor.Statistics) string {
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
	// The bar never moves back, even if a server did.
	pc := int64(ev.GetOperation().GetPercent())
	move := pc > b.percent && pc < 100
	if move {
		b.percent = pc
	}
	b.mu.Unlock()
	if move {
		b.bar.SetCurrent(pc)
	}
}

func (b *barProgress) note(text string) {
	if text == "" {
		return
	}
	b.mu.Lock()
	b.label = text
	b.mu.Unlock()
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
