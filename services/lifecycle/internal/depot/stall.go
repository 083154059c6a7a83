package depot

import (
	"github.com/vcfsm/vcfsm/services/lifecycle/internal/bundle"

	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// Stall bounds how long a transfer may make no (or too little) progress
// before it is given up. Zero fields take the defaults; a negative field
// disables its check.
type Stall struct {
	// Timeout: a read waiting this long for its next byte fails (default 30s).
	Timeout time.Duration
	// MinRate in bytes per second, averaged over Window of time spent
	// waiting for the server (default 64 KiB/s over 60s).
	MinRate int64
	Window  time.Duration
}

// Defaults of Stall.
const (
	DefaultStallTimeout       = 30 * time.Second
	DefaultMinRate      int64 = 64 << 10
	DefaultRateWindow         = time.Minute
)

func (s Stall) withDefaults() Stall {
	if s.Timeout == 0 {
		s.Timeout = DefaultStallTimeout
	}
	if s.MinRate == 0 {
		s.MinRate = DefaultMinRate
	}
	if s.Window == 0 {
		s.Window = DefaultRateWindow
	}
	return s
}

// ErrStalled marks a transfer given up for lack of progress; such errors
// are ErrFetch errors too.
var ErrStalled = errors.New("the transfer stalled")

// stallError is one sentence ("the transfer stalled: …") that is both
// ErrStalled and ErrFetch, so callers wrapping it add no second prefix.
type stallError struct{ msg string }

func (e *stallError) Error() string { return e.msg }

func (e *stallError) Is(target error) bool { return target == ErrStalled || target == bundle.ErrFetch }

func stalled(format string, args ...any) error {
	return &stallError{msg: ErrStalled.Error() + ": " + fmt.Sprintf(format, args...)}
}

// stallTransport watches every response body it returns: tarball
// downloads and registry pulls share it.
type stallTransport struct {
	base  http.RoundTripper
	limit Stall
}

func (t *stallTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		cancel()
		return resp, err
	}
	resp.Body = &stallBody{rc: resp.Body, limit: t.limit, cancel: cancel}
	return resp, nil
}

// stallBody fails a Read that waits longer than the timeout for data, and
// the transfer when the time spent waiting for the server over a window
// brought less than the minimum rate. Time the caller spends between reads
// (writing, decompressing) does not count: only the server is judged.
// Giving up cancels the request, which closes the connection.
type stallBody struct {
	rc     io.ReadCloser
	limit  Stall
	cancel context.CancelFunc

	mu      sync.Mutex
	got     int64 // bytes read so far
	waited  time.Duration
	winGot  int64
	stalled error
}

func (b *stallBody) Read(p []byte) (int, error) {
	if err := b.err(); err != nil {
		return 0, err
	}
	start := time.Now()
	var timer *time.Timer
	if b.limit.Timeout > 0 {
		timer = time.AfterFunc(b.limit.Timeout, func() {
			b.give(stalled("no data for %s after %d bytes (limit --download-stall-timeout)", b.limit.Timeout, b.count()))
		})
	}
	n, err := b.rc.Read(p)
	if timer != nil {
		timer.Stop()
	}
	b.account(n, time.Since(start))
	if s := b.err(); s != nil {
		return n, s
	}
	return n, err
}

func (b *stallBody) account(n int, waited time.Duration) {
	b.mu.Lock()
	b.got += int64(n)
	if b.limit.MinRate <= 0 || b.limit.Window <= 0 {
		b.mu.Unlock()
		return
	}
	b.winGot += int64(n)
	b.waited += waited
	if b.waited < b.limit.Window {
		b.mu.Unlock()
		return
	}
	rate := float64(b.winGot) / b.waited.Seconds()
	got, window := b.got, b.waited
	b.winGot, b.waited = 0, 0
	b.mu.Unlock()
	if rate < float64(b.limit.MinRate) {
		b.give(stalled("%.0f bytes/s over %s, below the floor of %d bytes/s (limits --download-min-rate, --download-rate-window), after %d bytes",
			rate, window.Round(time.Millisecond), b.limit.MinRate, got))
	}
}

func (b *stallBody) count() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.got
}

func (b *stallBody) err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stalled
}

// give records the first reason and aborts the request.
func (b *stallBody) give(err error) {
	b.mu.Lock()
	if b.stalled == nil {
		b.stalled = err
	}
	b.mu.Unlock()
	b.cancel()
}

func (b *stallBody) Close() error {
	defer b.cancel()
	return b.rc.Close()
}
