package sandbox

// Stats are the pool's gauges: workers alive, workers rendering now, and
// workers replaced since start.
func (p *Pool) Stats() (live, busy int, restarts int64) {
	p.mu.Lock()
	live = len(p.live)
	p.mu.Unlock()
	return live, max(live-len(p.idle), 0), p.restarts.Load()
}
