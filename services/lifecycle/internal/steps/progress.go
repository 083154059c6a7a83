package steps

import (
	"context"
	"errors"
	"fmt"
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/lifecycle"
	"sort"
	"strings"
	"sync"
	"time"
)

// applyProgress shows, on the running operation's progress message, how
// many resources each target (a Supervisor, or VCF Automation) has
// received, so clients see per-Supervisor progress of a long apply. It
// writes at most every progressEvery and once at the end.
type applyProgress struct {
	store Writer
	id    string

	mu    sync.Mutex
	order []string
	done  map[string]int
	total map[string]int
	left  int
	last  time.Time
	seq   int // messages counted so far

	// writeMu orders the writes; written is the seq of the last one. The
	// applying goroutines do not wait for a write (a service record with
	// thousands of pre-check results takes a while to store): only the one
	// publishing does.
	writeMu sync.Mutex
	written int
}

const progressEvery = 250 * time.Millisecond

// newApplyProgress returns nil (which counts nothing) when no operation
// runs: a controller's re-apply has no progress to show.
func newApplyProgress(store Writer, svc *lifecycle.Service, resources []*lifecycle.Resource) *applyProgress {
	if svc.ActiveOperation == "" {
		return nil
	}
	p := &applyProgress{store: store, id: svc.ID, done: map[string]int{}, total: map[string]int{}, left: len(resources)}
	for _, r := range resources {
		k := progressScope(r)
		if p.total[k] == 0 {
			p.order = append(p.order, k)
		}
		p.total[k]++
	}
	sort.Strings(p.order)
	return p
}

func progressScope(r *lifecycle.Resource) string {
	if r.Supervisor != "" {
		return r.Supervisor
	}
	return "VCF Automation"
}

// applied counts r and publishes the counts when due.
func (p *applyProgress) applied(ctx context.Context, r *lifecycle.Resource) {
	if p == nil {
		return
	}
	p.mu.Lock()
	msg, due := p.count(r, time.Now())
	seq := p.seq
	p.mu.Unlock()
	if !due {
		return
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if seq < p.written {
		return // a newer message is already stored
	}
	p.written = seq
	_, _ = p.store.Mutate(context.WithoutCancel(ctx), p.id, func(_ lifecycle.Tx, s *lifecycle.Service) error {
		if s.Progress == nil || s.ActiveOperation == "" || s.Progress.OperationID != s.ActiveOperation {
			return errNoProgress // nothing to show: write nothing
		}
		s.Progress.Message = msg
		return nil
	})
}

// count records r (p.mu held) and returns the message and whether it is
// due: the last resource, or progressEvery after the previous message.
func (p *applyProgress) count(r *lifecycle.Resource, now time.Time) (string, bool) {
	p.done[progressScope(r)]++
	p.left--
	if p.left > 0 && now.Sub(p.last) < progressEvery {
		return "", false
	}
	p.last = now
	p.seq++
	return p.message(), true
}

// progressListed bounds the targets a progress message names: the message
// is stored in the service record and sent to every watcher several times
// a second, so across a thousand Supervisors it summarises.
const progressListed = 10

// message lists every target's count when there are few; else the totals
// and the first targets under way.
func (p *applyProgress) message() string {
	if len(p.order) <= progressListed {
		parts := make([]string, 0, len(p.order))
		for _, k := range p.order {
			parts = append(parts, fmt.Sprintf("%s %d/%d", k, p.done[k], p.total[k]))
		}
		return "applied: " + strings.Join(parts, ", ")
	}
	complete, all := 0, 0
	var underWay []string
	for _, k := range p.order {
		done, total := p.done[k], p.total[k]
		all += total
		switch {
		case done == total:
			complete++
		case done > 0 && len(underWay) < progressListed:
			underWay = append(underWay, fmt.Sprintf("%s %d/%d", k, done, total))
		}
	}
	msg := fmt.Sprintf("applied: %d/%d resources, %d/%d targets complete", all-p.left, all, complete, len(p.order))
	if len(underWay) > 0 {
		msg += "; under way: " + strings.Join(underWay, ", ")
	}
	return msg
}

var errNoProgress = errors.New("no running operation to show progress on")
