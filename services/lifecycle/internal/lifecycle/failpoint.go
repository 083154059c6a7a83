package lifecycle

import (
	"context"
	"os"
	"strings"
)

// Failpoints let the crash tests stop the real binary at a known point of
// an operation: VCFSM_FAILPOINTS="upgrade/resources:before,rollback/cleanup:after"
// holds the worker before a step acts (after the step is recorded as
// running) or after it acted (before its success is recorded), until the
// process is killed. Unset in production; read once at start.
type failpoints map[string]bool

func loadFailpoints() failpoints {
	fp := failpoints{}
	for _, p := range strings.Split(os.Getenv("VCFSM_FAILPOINTS"), ",") {
		if p = strings.TrimSpace(p); p != "" {
			fp[p] = true
		}
	}
	return fp
}

// hold blocks at a failpoint until ctx ends.
func (m *Manager) hold(ctx context.Context, opType, step, when string) {
	if !m.failpoints[opType+"/"+step+":"+when] {
		return
	}
	m.log.Warn("failpoint reached: holding until the process is killed", "failpoint", opType+"/"+step+":"+when)
	<-ctx.Done()
}
