package engine

import (
	"math/rand/v2"
	"time"
)

// jitter spreads retries of many operations failing together (a peer that
// went down) over [d/2, d] instead of hitting the peer in lockstep.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
