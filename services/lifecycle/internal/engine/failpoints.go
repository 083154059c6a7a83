package engine

import (
	"context"
	"log/slog"
	"strings"
)

// Failpoints let the crash tests stop the real binary at a known point of
// an operation: "upgrade/resources:before,rollback/cleanup:after" holds the
// worker before a step acts (after it is journaled as running) or after it
// acted (before its success is journaled), until the process is killed.
type Failpoints map[string]bool

// ParseFailpoints reads a comma-separated list (VCFSM_FAILPOINTS).
func ParseFailpoints(list string) Failpoints {
	fp := Failpoints{}
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			fp[p] = true
		}
	}
	return fp
}

// hold blocks at a failpoint until ctx ends.
func (fp Failpoints) hold(ctx context.Context, log *slog.Logger, kind, step, when string) {
	fp.Hold(ctx, log, kind+"/"+step+":"+when)
}

// Hold blocks at the failpoint name, when set, until ctx ends: a step
// that journals several times holds between them with names of its own
// ("rollout/wave-1:moving").
func (fp Failpoints) Hold(ctx context.Context, log *slog.Logger, name string) {
	if !fp[name] {
		return
	}
	log.Warn("failpoint reached: holding until the process is killed", "failpoint", name)
	<-ctx.Done()
}
