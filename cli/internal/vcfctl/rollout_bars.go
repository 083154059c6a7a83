package vcfctl

import (
	"fmt"
	"io"
	"sync"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	lifecyclev1 "github.com/vcfsm/vcfsm/gen/vcfservices/lifecycle/v1"
)

// rolloutView shows a rollout as it moves.
type rolloutView interface {
	show(r *lifecyclev1.Rollout, subject string)
	// finish ends the display; ok says whether the rollout succeeded.
	finish(ok bool)
}

// newRolloutView draws a live bar per wave where it can (newProgress's
// rule); elsewhere it prints a line per change.
func (p *printer) newRolloutView(what string) rolloutView {
	if p.liveTerminal(p.status) {
		return &rolloutBars{w: p.status, what: what}
	}
	return newRolloutProgress(p.status, what)
}

// rolloutBars is a live bar per wave (targets done of the wave's), its
// label the wave's state and its other counts; the rollout's line and
// the approval hint are printed above the bars when they change.
type rolloutBars struct {
	w    io.Writer
	what string
	p    *mpb.Progress
	bars []*mpb.Bar

	mu       sync.Mutex
	labels   []string
	header   string
	hinted   int32
	finished bool
}

func (b *rolloutBars) show(r *lifecyclev1.Rollout, subject string) {
	counts := waveCounts(r)
	if b.p == nil {
		b.start(len(counts))
	}
	if h := rolloutHeader(r); h != b.header {
		b.header = h
		_, _ = fmt.Fprintf(b.p, "%s: %s\n", b.what, h)
	}
	if r.GetState() == "WaitingApproval" && b.hinted != r.GetWave() {
		b.hinted = r.GetWave()
		_, _ = fmt.Fprintf(b.p, "%s: wave %s waits for an administrator's approval: 'vcfctl rollout approve %s'\n", b.what, waveName(r, r.GetWave()), subject)
	}
	b.mu.Lock()
	for i, c := range counts {
		if i >= len(b.labels) {
			break
		}
		b.labels[i] = waveLine(r, i, c)
	}
	b.mu.Unlock()
	for i, c := range counts {
		if i < len(b.bars) {
			b.bars[i].SetTotal(int64(c.total), false)
			b.bars[i].SetCurrent(int64(c.done))
		}
	}
}

// start adds a bar per wave; a bar made with total 0 completes only when
// finish says so, so a wave rolled back can move back.
func (b *rolloutBars) start(waves int) {
	b.p = mpb.New(mpb.WithOutput(b.w), mpb.WithAutoRefresh(), mpb.WithWidth(30))
	b.labels = make([]string, waves)
	for i := range waves {
		b.bars = append(b.bars, b.p.AddBar(0,
			mpb.PrependDecorators(decor.Any(func(decor.Statistics) string {
				b.mu.Lock()
				defer b.mu.Unlock()
				return b.what + ": " + b.labels[i]
			}, decor.WCSyncSpaceR)),
			mpb.AppendDecorators(decor.Percentage(decor.WCSyncSpace)),
		))
	}
}

func (b *rolloutBars) finish(ok bool) {
	if b.p == nil || b.finished {
		return
	}
	b.finished = true
	for _, bar := range b.bars {
		if ok {
			bar.SetTotal(-1, true)
		} else {
			bar.Abort(false)
		}
	}
	b.p.Wait()
}
