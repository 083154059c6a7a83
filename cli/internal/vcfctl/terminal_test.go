package vcfctl_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"

	"github.com/vcfsm/vcfsm/services/lifecycle/target/simulator"

	"github.com/vcfsm/vcfsm/cli/internal/vcfctl"
)

// drip serves a file slowly: chunks spread over about d, with its
// Content-Length, so the download's percent moves visibly.
func drip(path string, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := os.ReadFile(path) //nolint:gosec // a test fixture
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		const chunks = 20
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Header().Set("Content-Type", "application/x-tar")
		tick := time.NewTicker(d / chunks)
		defer tick.Stop()
		size := (len(b) + chunks - 1) / chunks
		for off := 0; off < len(b); off += size {
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return
			}
			_, _ = w.Write(b[off:min(off+size, len(b))])
			w.(http.Flusher).Flush()
		}
	})
}

// screen collects what a pseudo-terminal shows.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// onTerminal runs vcfctl with standard output on a pseudo-terminal and
// returns the exit code and everything the terminal received.
func (w *world) onTerminal(t *testing.T, until string, args ...string) (int, string) {
	t.Helper()
	return w.onTerminalWith(t, terminalOpts{until: until, size: &pty.Winsize{Rows: 40, Cols: 140}}, args...)
}

// terminalOpts shape a run on a pseudo-terminal.
type terminalOpts struct {
	// until is text the screen must show by the end.
	until string
	// size is the window size; nil leaves the terminal without one.
	size *pty.Winsize
	// typed is what the user types; standard input is then the terminal.
	typed string
	// code is the expected exit code.
	code int
}

func (w *world) onTerminalWith(t *testing.T, o terminalOpts, args ...string) (int, string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer func() { _ = ptmx.Close() }()
	if o.size != nil {
		require.NoError(t, pty.Setsize(ptmx, o.size))
	}
	scr := &screen{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(scr, ptmx)
	}()
	var in io.Reader = strings.NewReader("")
	if o.typed != "" {
		_, err := ptmx.Write([]byte(o.typed))
		require.NoError(t, err)
		in = tty
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errOut bytes.Buffer
	code := vcfctl.Run(ctx, args, vcfctl.IO{In: in, Out: tty, Err: &errOut}, w.getenv)
	require.Equal(t, o.code, code, "stderr: %s\nscreen: %q", errOut.String(), scr.String())
	require.Eventually(t, func() bool { return strings.Contains(scr.String(), o.until) }, 10*time.Second, 10*time.Millisecond,
		"the terminal never showed %q: %q", o.until, scr.String())
	require.NoError(t, tty.Close())
	return code, scr.String()
}

var percentRE = regexp.MustCompile(`(\d+) %`)

// percents lists the distinct percentages a bar showed, in order.
func percents(s string) []int {
	var out []int
	seen := map[int]bool{}
	for _, m := range percentRE.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(m[1])
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func between(ps []int, lo, hi int) int {
	n := 0
	for _, p := range ps {
		if p > lo && p < hi {
			n++
		}
	}
	return n
}

// On a terminal, a slow download and an upgrade show a live progress bar
// that moves; elsewhere, one plain line per step.
func TestProgressOnATerminal(t *testing.T) {
	w := newWorld(t)
	w.login(t)
	name, tar := w.tarball(t, v1)
	w.tars.Handle(name, drip(tar, 3*time.Second))

	_, scr := w.onTerminal(t, "Unresolved (inactive", "service", "create", w.tars.URL(name), "--wait")
	require.Contains(t, scr, "create: download")
	require.NotContains(t, scr, "register", "one verb: the command's")
	require.Contains(t, scr, "\x1b[", "the bar redraws itself with terminal control sequences")
	ps := percents(scr)
	require.GreaterOrEqual(t, between(ps, 0, 100), 3, "the bar moved through several percentages during the download: %v", ps)
	require.Contains(t, ps, 100)

	// Tables are coloured by status on a terminal, unless NO_COLOR is set.
	_, scr = w.onTerminal(t, "arcturus.galaxy.com", "service", "list")
	require.Contains(t, scr, "\x1b[33mUnresolved")
	w.env["NO_COLOR"] = "1"
	_, scr = w.onTerminal(t, "arcturus.galaxy.com", "service", "list")
	require.NotContains(t, scr, "\x1b[")
	require.Regexp(t, `arcturus\.galaxy\.com\s+1\.0\.0\s+Unresolved`, scr)
	delete(w.env, "NO_COLOR")

	w.ok(t, "service", "activate", "arcturus.galaxy.com", "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait")
	name, tar = w.tarball(t, v2)
	w.tars.Handle(name, drip(tar, 3*time.Second))
	_, scr = w.onTerminal(t, "Healthy (active, version 2.0.0)", "service", "upgrade", "arcturus.galaxy.com", "--source", w.tars.URL(name), "--accept-plan-grants", "--wait")
	require.Contains(t, scr, "upgrade: download")
	ps = percents(scr)
	require.GreaterOrEqual(t, between(ps, 0, 100), 3, "the bar moved during the upgrade: %v", ps)
	require.Contains(t, ps, 100)

	// Not a terminal: plain lines, one per step change, no control codes.
	out := w.ok(t, "service", "upgrade", "arcturus.galaxy.com", "--source", w.publish(t, v3), "--wait")
	require.NotContains(t, out, "\x1b[")
	require.NotContains(t, out, "\r")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := 1; i < len(lines); i++ {
		require.NotEqual(t, lines[i-1], lines[i], "one line per change")
	}
	// The watch may coalesce quick steps; several must still show.
	steps := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^upgrade: (\S+) \(`).FindAllStringSubmatch(out, -1) {
		steps[m[1]] = true
	}
	require.GreaterOrEqual(t, len(steps), 3, "one line per step: %s", out)
	require.Contains(t, lines[len(lines)-1], ": Healthy (active, version 3.0.0)")

	// Interrupted while waiting: the operation goes on, the CLI says so.
	vega := v1
	vega.Name = "vega.galaxy.com"
	name, tar = w.tarball(t, vega)
	w.tars.Handle(name, drip(tar, 3*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := time.AfterFunc(time.Second, cancel)
	defer stop.Stop()
	var o, e bytes.Buffer
	code := vcfctl.Run(ctx, []string{"service", "create", w.tars.URL(name), "--wait"}, vcfctl.IO{In: strings.NewReader(""), Out: &o, Err: &e}, w.getenv)
	require.Equal(t, vcfctl.ExitError, code, "%s", o.String())
	require.Contains(t, e.String(), "interrupted; the operation goes on (follow it with 'vcfctl service watch urn:vcloud:entity:broadcom:vcfService:")
	created := regexp.MustCompile(`Created (urn:\S+)`).FindStringSubmatch(o.String())
	require.Len(t, created, 2, "%s", o.String())
	require.Eventually(t, func() bool {
		r := w.run(t, "service", "get", created[1])
		return r.code == 0 && strings.Contains(r.out, "Unresolved")
	}, time.Minute, 50*time.Millisecond, "the registration finished without the CLI")
}

// Where no bar can be drawn (TERM=dumb, a terminal without a window size)
// progress comes as plain lines; while the wait waits on a slow
// Supervisor it says which resource; delete asks on a terminal.
func TestTerminalFallbacksAndConfirmation(t *testing.T) {
	w := newWorld(t)
	w.login(t)
	name, tar := w.tarball(t, v1)
	w.tars.Handle(name, drip(tar, 2*time.Second))
	wide := &pty.Winsize{Rows: 40, Cols: 250}

	w.env["TERM"] = "dumb"
	_, scr := w.onTerminalWith(t, terminalOpts{until: "Unresolved (inactive", size: wide}, "service", "create", w.tars.URL(name), "--wait")
	require.Contains(t, scr, "create: download (Busy, Resolving)")
	require.NotContains(t, scr, "\x1b[", "a dumb terminal gets no redrawn bar and no colour")
	delete(w.env, "TERM")
	w.ok(t, "service", "delete", "arcturus.galaxy.com", "--yes", "--wait")

	_, scr = w.onTerminalWith(t, terminalOpts{until: "Unresolved (inactive"}, "service", "create", w.tars.URL(name), "--wait")
	require.Contains(t, scr, "create: download (Busy, Resolving)", "without a window size the steps still show")
	require.NotContains(t, scr, "\x1b[")

	sim := w.box.Sys.Lifecycle().Simulator()
	require.NoError(t, sim.InjectFault(simulator.Fault{Kind: "SupervisorService", Scope: "supervisor-vc1", Op: "apply",
		Effect: simulator.EffectSlow, Delay: simulator.Duration(15 * time.Second)}))
	_, scr = w.onTerminalWith(t, terminalOpts{until: "Healthy (active, version 1.0.0)", size: wide},
		"service", "activate", "arcturus.galaxy.com", "--accept-eula", "--accept-signatures", "--accept-rendered-grants", "--wait")
	require.Contains(t, scr, "activate: waiting for SupervisorService arcturus-install on supervisor-vc1: Busy: Waiting for the target to finish",
		"the bar names the resource and the Supervisor the wait waits on")
	sim.ClearFaults()

	_, scr = w.onTerminalWith(t, terminalOpts{typed: "n\n", code: vcfctl.ExitError, size: wide}, "service", "delete", "arcturus.galaxy.com")
	require.NotContains(t, scr, "Deletion of")
	require.Contains(t, w.ok(t, "service", "list"), "arcturus.galaxy.com", "answering no deletes nothing")
	_, scr = w.onTerminalWith(t, terminalOpts{typed: "y\n", until: "delete: deleted", size: wide}, "service", "delete", "arcturus.galaxy.com", "--wait")
	require.Contains(t, scr, "Deletion of urn:vcloud:entity:broadcom:vcfService:")
	require.Contains(t, w.ok(t, "service", "list"), "No services found.")
}
